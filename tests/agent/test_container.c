/* test_container.c - a replica's container, as written (agent/container/
 * container.h): the seccomp profile resolved for our architecture and an
 * empty capability set (rules that need a capability, another
 * architecture or a newer kernel dropped; new user namespaces refused
 * unless allowed), config.json's namespaces, capabilities, limits and
 * binds, CDI edits of the assigned devices only (and the device-path edits
 * without CDI), which images this agent runs itself, and the runtime's
 * choice on a hybrid host. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/container/container.h"

static json_t *parse(const char *text)
{
    json_t *o = json_loads(text, 0, NULL);
    assert_non_null(o);
    return o;
}

/* The rules of out that name syscall (a new array). */
static json_t *rules_naming(const json_t *seccomp, const char *syscall)
{
    json_t *found = json_array(), *rule, *name;
    size_t i, k;
    json_array_foreach(json_object_get(seccomp, "syscalls"), i, rule) {
        json_array_foreach(json_object_get(rule, "names"), k, name) {
            if (strcmp(json_string_value(name), syscall) == 0)
                json_array_append(found, rule);
        }
    }
    return found;
}

static const char *PROFILE =
    "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 38,"
    " \"archMap\": [{\"architecture\": \"SCMP_ARCH_X86_64\", \"subArchitectures\": [\"SCMP_ARCH_X86\"]},"
    "               {\"architecture\": \"SCMP_ARCH_AARCH64\", \"subArchitectures\": []}],"
    " \"syscalls\": ["
    "  {\"names\": [\"read\", \"clone\", \"unshare\", \"clone3\"], \"action\": \"SCMP_ACT_ALLOW\"},"
    "  {\"names\": [\"mount\"], \"action\": \"SCMP_ACT_ALLOW\", \"includes\": {\"caps\": [\"CAP_SYS_ADMIN\"]}},"
    "  {\"names\": [\"socket\"], \"action\": \"SCMP_ACT_ALLOW\", \"excludes\": {\"caps\": [\"CAP_AUDIT_WRITE\"]},"
    "   \"args\": [{\"index\": 0, \"value\": 16, \"valueTwo\": 0, \"op\": \"SCMP_CMP_NE\"}]},"
    "  {\"names\": [\"arm_fadvise64_64\"], \"action\": \"SCMP_ACT_ALLOW\", \"includes\": {\"arches\": [\"arm\"]}},"
    "  {\"names\": [\"future_call\"], \"action\": \"SCMP_ACT_ALLOW\", \"includes\": {\"minKernel\": \"99.0\"}},"
    "  {\"names\": [\"personality\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1}]}";

static void a_rule_is_kept_only_for_our_capabilities_architecture_and_kernel(void **state)
{
    (void)state;
    json_t *profile = parse(PROFILE), *out = NULL;
    assert_int_equal(gp_seccomp_resolve(profile, "amd64", NULL, true, &out, NULL), GP_OK);
    const char *kept[] = {"read", "clone", "unshare", "clone3", "socket", "personality"};
    const char *dropped[] = {"mount", "arm_fadvise64_64", "future_call"};
    for (size_t i = 0; i < 6; i++) {
        json_t *r = rules_naming(out, kept[i]);
        assert_int_equal(json_array_size(r), 1);
        json_decref(r);
    }
    for (size_t i = 0; i < 3; i++) {
        json_t *r = rules_naming(out, dropped[i]);
        assert_int_equal(json_array_size(r), 0);
        json_decref(r);
    }
    json_t *socket = rules_naming(out, "socket"), *personality = rules_naming(out, "personality");
    assert_int_equal(json_array_size(json_object_get(json_array_get(socket, 0), "args")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(personality, 0), "errnoRet")), 1);
    assert_string_equal(json_string_value(json_object_get(out, "defaultAction")), "SCMP_ACT_ERRNO");
    assert_int_equal(json_integer_value(json_object_get(out, "defaultErrnoRet")), 38);
    json_t *arches = json_object_get(out, "architectures");
    assert_int_equal(json_array_size(arches), 1); /* not the 32-bit sub-architectures */
    assert_string_equal(json_string_value(json_array_get(arches, 0)), "SCMP_ARCH_X86_64");
    const char *admin[] = {"CAP_SYS_ADMIN", NULL};
    json_decref(out);
    assert_int_equal(gp_seccomp_resolve(profile, "amd64", admin, true, &out, NULL), GP_OK);
    json_t *mount = rules_naming(out, "mount");
    assert_int_equal(json_array_size(mount), 1);
    json_decref(mount);
    json_decref(socket);
    json_decref(personality);
    json_decref(out);
    json_decref(profile);
}

static void new_user_namespaces_are_refused_unless_allowed(void **state)
{
    (void)state;
    json_t *profile = parse(PROFILE), *out = NULL;
    assert_int_equal(gp_seccomp_resolve(profile, "amd64", NULL, false, &out, NULL), GP_OK);
    json_t *read = rules_naming(out, "read");
    assert_int_equal(json_array_size(read), 1); /* the rest of the allow rule stays */
    const char *calls[] = {"clone", "unshare"};
    for (size_t c = 0; c < 2; c++) {
        json_t *r = rules_naming(out, calls[c]);
        assert_int_equal(json_array_size(r), 2); /* allowed without CLONE_NEWUSER, EPERM with it */
        for (size_t i = 0; i < 2; i++) {
            json_t *arg = json_array_get(json_object_get(json_array_get(r, i), "args"), 0);
            assert_non_null(arg);
            assert_int_equal(json_integer_value(json_object_get(arg, "value")), CLONE_NEWUSER);
            assert_string_equal(json_string_value(json_object_get(arg, "op")), "SCMP_CMP_MASKED_EQ");
        }
        json_decref(r);
    }
    json_t *clone3 = rules_naming(out, "clone3");
    assert_int_equal(json_array_size(clone3), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(clone3, 0), "action")), "SCMP_ACT_ERRNO");
    json_decref(clone3);
    json_decref(read);
    json_decref(out);
    json_t *bad = parse("{\"syscalls\": []}");
    assert_int_equal(gp_seccomp_resolve(bad, "amd64", NULL, false, &out, NULL), GP_ERR_INVALID);
    json_decref(bad);
    json_decref(profile);
}

static char *temp_dir(void)
{
    char *d = strdup("/tmp/gp-container-XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* rm -rf dir, and free its name. */
static void remove_dir(char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A spec whose profile is PROFILE (the machine's may be missing). */
static json_t *config_for(const char *dir, bool private_network, bool read_only_root)
{
    static char profile[512];
    snprintf(profile, sizeof profile, "%s/seccomp.json", dir);
    write_text(profile, PROFILE);
    static const char *const none[] = {NULL};
    gp_container_bind binds[] = {{"/var/work/job7", "/var/work/job7", false}, {"/srv/data", "/data", true}};
    gp_container_spec c = {.runtime = "/usr/sbin/runc", .id = "gpupool-job7-r0-1", .bundle = dir, .rootfs = dir,
                           .private_network = private_network, .read_only_root = read_only_root, .binds = binds,
                           .n_binds = 2, .seccomp_profile = profile, .cdi_dirs = none};
    char *argv[] = {"python3", "train.py", NULL}, *envp[] = {"PATH=/usr/bin:/bin", NULL};
    gid_t groups[] = {100};
    gp_container_process p = {.argv = argv, .envp = envp, .cwd = "/var/work/job7", .uid = 2000000007,
                              .gid = 2000000007, .groups = groups, .ngroups = 1};
    gp_container_limits l = {.cgroups_path = "/gpupool/job7-r0-1",
                             .limits = {.cpu_millis = 2000, .mem_mib = 4096, .pids_max = 1024}, .shm_mib = 512};
    json_t *out = NULL;
    assert_int_equal(gp_container_config(&c, &p, &l, &out, NULL), GP_OK);
    return out;
}

static void the_config_holds_namespaces_no_capability_limits_and_binds(void **state)
{
    (void)state;
    char *dir = temp_dir();
    json_t *c = config_for(dir, false, false);
    json_t *linux_ = json_object_get(c, "linux"), *process = json_object_get(c, "process");
    assert_int_equal(json_array_size(json_object_get(linux_, "namespaces")), 4);
    assert_true(json_is_true(json_object_get(process, "noNewPrivileges")));
    const char *sets[] = {"bounding", "effective", "permitted", "inheritable", "ambient"};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(json_array_size(json_object_get(json_object_get(process, "capabilities"), sets[i])), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(process, "user"), "uid")), 2000000007);
    assert_string_equal(json_string_value(json_object_get(linux_, "cgroupsPath")), "/gpupool/job7-r0-1");
    json_t *res = json_object_get(linux_, "resources");
    json_t *memory = json_object_get(res, "memory");
    assert_int_equal(json_integer_value(json_object_get(memory, "limit")), 4096LL * 1048576);
    assert_int_equal(json_integer_value(json_object_get(memory, "swap")), 4096LL * 1048576);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(res, "pids"), "limit")), 1024);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(res, "cpu"), "quota")), 200000);
    json_t *deny = json_array_get(json_object_get(res, "devices"), 0);
    assert_false(json_is_true(json_object_get(deny, "allow")));
    assert_true(json_array_size(json_object_get(linux_, "maskedPaths")) > 5);
    assert_non_null(json_object_get(linux_, "seccomp"));
    char *text = json_dumps(c, 0);
    assert_non_null(strstr(text, "\"destination\": \"/data\", \"type\": \"bind\", \"source\": \"/srv/data\", "
                                 "\"options\": [\"rbind\", \"ro\""));
    assert_non_null(strstr(text, "size=512m"));
    struct utsname host;
    assert_int_equal(uname(&host), 0);
    assert_string_equal(json_string_value(json_object_get(c, "hostname")), host.nodename);
    free(text);
    json_decref(c);
    c = config_for(dir, true, true);
    assert_int_equal(json_array_size(json_object_get(json_object_get(c, "linux"), "namespaces")), 5);
    assert_true(json_is_true(json_object_get(json_object_get(c, "root"), "readonly")));
    assert_string_equal(json_string_value(json_object_get(c, "hostname")), "gpupool-job7-r0-1");
    text = json_dumps(c, 0);
    assert_null(strstr(text, "/etc/resolv.conf")); /* its own network: not the host's names */
    free(text);
    json_decref(c);
    remove_dir(dir);
}

static void a_mount_onto_proc_dev_or_through_dotdot_is_refused(void **state)
{
    (void)state;
    char *dir = temp_dir();
    static const char *const none[] = {NULL};
    const char *targets[] = {"/proc/sys", "/dev", "relative", "/data/../etc", "/", "/sys/fs/cgroup"};
    char *argv[] = {"true", NULL}, *envp[] = {NULL};
    gp_container_process p = {.argv = argv, .envp = envp, .cwd = "/", .uid = 2000000007, .gid = 2000000007};
    gp_container_limits l = {0};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        gp_container_bind bind = {"/srv/data", targets[i], true};
        gp_container_spec c = {.bundle = dir, .rootfs = dir, .binds = &bind, .n_binds = 1, .cdi_dirs = none};
        json_t *out = NULL;
        gp_error err;
        assert_int_equal(gp_container_config(&c, &p, &l, &out, &err), GP_ERR_INVALID);
        assert_string_equal(err.field, "mounts");
        assert_null(out);
    }
    remove_dir(dir);
}

/* A driver outside the usual folders (the GPU machine's
 * /usr/local/nvidia/lib64, named by an ld.so.conf.d file): its folder is
 * found through the include, its NVIDIA libraries (and nothing else of
 * the folder) are bound read-only, and the folder joins the container's
 * LD_LIBRARY_PATH after the job's own. */
static void the_drivers_libraries_are_found_where_the_linker_looks(void **state)
{
    (void)state;
    char *dir = temp_dir(), path[512], conf_d[512], libs[512];
    snprintf(conf_d, sizeof conf_d, "%s/ld.so.conf.d", dir);
    snprintf(libs, sizeof libs, "%s/nvidia/lib64", dir);
    assert_int_equal(mkdir(conf_d, 0755), 0);
    snprintf(path, sizeof path, "%s/nvidia", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(mkdir(libs, 0755), 0);
    const char *names[] = {"libcuda.so.1", "libnvidia-ml.so.1", "libssl.so.3"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", libs, names[i]);
        write_text(path, "elf");
    }
    snprintf(path, sizeof path, "%s/nvidia.conf", conf_d);
    write_text(path, "# the driver\n");
    FILE *f = fopen(path, "a");
    fprintf(f, "%s  \n", libs);
    fclose(f);
    snprintf(path, sizeof path, "%s/ld.so.conf", dir);
    f = fopen(path, "w");
    fprintf(f, "include %s/*.conf\n/usr/lib/x86_64-linux-gnu\n", conf_d);
    fclose(f);
    char(*folders)[GP_CONTAINER_PATH_MAX] = calloc(16, sizeof *folders);
    size_t n = gp_cdi_library_folders(path, folders, 16);
    bool seen = false;
    for (size_t i = 0; i < n; i++) {
        seen |= strcmp(folders[i], libs) == 0;
        for (size_t k = 0; k < i; k++)
            assert_string_not_equal(folders[i], folders[k]);
    }
    assert_true(seen);
    json_t *config = parse("{\"process\": {\"env\": [\"LD_LIBRARY_PATH=/opt/job/lib\"]}}");
    gp_cdi_driver_edits(config, (const char(*)[GP_CONTAINER_PATH_MAX])folders, n);
    char *text = json_dumps(config, 0), want[1024];
    snprintf(want, sizeof want, "\"source\": \"%s/libcuda.so.1\"", libs);
    assert_non_null(strstr(text, want));
    snprintf(want, sizeof want, "\"source\": \"%s/libnvidia-ml.so.1\"", libs);
    assert_non_null(strstr(text, want));
    assert_null(strstr(text, "libssl"));
    snprintf(want, sizeof want, "\"LD_LIBRARY_PATH=/opt/job/lib:%s\"", libs);
    assert_non_null(strstr(text, want));
    free(text);
    free(folders);
    json_decref(config);
    remove_dir(dir);
}

static void cdi_edits_apply_to_the_assigned_devices_only(void **state)
{
    (void)state;
    char *dir = temp_dir(), path[512];
    snprintf(path, sizeof path, "%s/nvidia.json", dir);
    write_text(path, "{\"cdiVersion\": \"0.5.0\", \"kind\": \"nvidia.com/gpu\","
                     " \"devices\": [{\"name\": \"GPU-mine\", \"containerEdits\": {\"deviceNodes\": [{\"path\": \"/dev/null\"}]}},"
                     "              {\"name\": \"GPU-other\", \"containerEdits\": {\"deviceNodes\": [{\"path\": \"/dev/zero\"}]}}],"
                     " \"containerEdits\": {\"env\": [\"NVIDIA_CTK=1\"],"
                     "   \"mounts\": [{\"hostPath\": \"/usr/bin/true\", \"containerPath\": \"/usr/bin/nvidia-smi\"}],"
                     "   \"hooks\": [{\"hookName\": \"createContainer\", \"path\": \"/usr/bin/true\", \"args\": [\"true\"]}]}}");
    const char *dirs[] = {dir, NULL}, *mine[] = {"GPU-mine", NULL};
    json_t *config = parse("{\"process\": {\"env\": []}, \"mounts\": [], \"linux\": {\"resources\": {\"devices\": []}}}");
    bool used = false;
    assert_int_equal(gp_cdi_apply(config, dirs, mine, NULL, &used, NULL), GP_OK);
    assert_true(used);
    char *text = json_dumps(config, 0);
    assert_non_null(strstr(text, "\"path\": \"/dev/null\", \"type\": \"c\", \"major\": 1, \"minor\": 3"));
    assert_null(strstr(text, "/dev/zero"));
    assert_non_null(strstr(text, "NVIDIA_CTK=1"));
    assert_non_null(strstr(text, "/usr/bin/nvidia-smi"));
    assert_non_null(strstr(text, "createContainer"));
    free(text);
    json_decref(config);
    /* the same spec as YAML, as `nvidia-ctk cdi generate` writes it by default */
    unlink(path);
    snprintf(path, sizeof path, "%s/nvidia.yaml", dir);
    write_text(path, "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: GPU-mine\n  containerEdits:\n"
                     "    deviceNodes:\n    - path: /dev/full\n");
    config = parse("{}");
    assert_int_equal(gp_cdi_apply(config, dirs, mine, NULL, &used, NULL), GP_OK);
    assert_true(used);
    text = json_dumps(config, 0);
    assert_non_null(strstr(text, "\"path\": \"/dev/full\", \"type\": \"c\", \"major\": 1, \"minor\": 7"));
    free(text);
    json_decref(config);
    unlink(path);
    /* no spec names the device: the backend's paths, a stand-in file bound at /dev/NAME */
    snprintf(path, sizeof path, "%s/nvidia-caps", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/nvidia-caps/nvidia-cap3", dir);
    write_text(path, "cap");
    const char *other[] = {"GPU-unknown", NULL}, *paths[] = {path, "/dev/null", NULL};
    config = parse("{}");
    assert_int_equal(gp_cdi_apply(config, dirs, other, paths, &used, NULL), GP_OK);
    assert_false(used);
    text = json_dumps(config, 0);
    assert_non_null(strstr(text, "\"destination\": \"/dev/nvidia-caps/nvidia-cap3\""));
    assert_non_null(strstr(text, "\"path\": \"/dev/null\", \"type\": \"c\""));
    free(text);
    json_decref(config);
    const char *missing[] = {"/nonexistent/nvidia9", NULL};
    config = parse("{}");
    assert_int_equal(gp_cdi_apply(config, dirs, other, missing, &used, NULL), GP_ERR_INVALID);
    json_decref(config);
    remove_dir(dir);
}

static void only_dir_images_run_here_and_a_bad_path_is_refused(void **state)
{
    (void)state;
    char out[256];
    gp_error err;
    assert_int_equal(gp_container_rootfs_of("dir:/tmp", out, sizeof out, &err), GP_OK);
    assert_string_equal(out, "/tmp");
    assert_int_equal(gp_container_rootfs_of("docker://reg:5000/team/img:1", out, sizeof out, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "image");
    assert_int_equal(gp_container_rootfs_of("dir:relative", out, sizeof out, &err), GP_ERR_INVALID);
    assert_int_equal(gp_container_rootfs_of("dir:/tmp,upperdir=/etc", out, sizeof out, &err), GP_ERR_INVALID);
    assert_int_equal(gp_container_rootfs_of("dir:/nonexistent-image", out, sizeof out, &err), GP_ERR_INVALID);
}

static void the_runtime_is_runc_on_a_hybrid_host_unless_overridden(void **state)
{
    (void)state;
    char out[256], why[512];
    gp_error err;
    assert_int_equal(gp_container_runtime_choose("/nonexistent/crun", GP_CGROUP_V1, out, sizeof out, why, sizeof why,
                                                 &err),
                     GP_ERR_NOT_FOUND);
    assert_int_equal(gp_container_runtime_choose("/bin/true", GP_CGROUP_V1, out, sizeof out, why, sizeof why, &err),
                     GP_OK);
    assert_string_equal(out, "/bin/true");
    if (access("/usr/sbin/runc", X_OK) != 0 && access("/usr/bin/runc", X_OK) != 0)
        return;
    assert_int_equal(gp_container_runtime_choose(NULL, GP_CGROUP_V1, out, sizeof out, why, sizeof why, &err), GP_OK);
    assert_non_null(strstr(out, "/runc"));
    assert_non_null(strstr(why, "hybrid"));
}

/* The GPU machine's pure v2 (and a host without cgroups) gets crun, with
 * the cgroupfs manager: the agent passes no --systemd-cgroup, so the
 * bundle's cgroupsPath is the absolute "/PARENT/NAME" the agent made
 * (the_config_holds_..., above), not systemd's "slice:prefix:name". */
static void the_runtime_is_crun_on_a_v2_host_where_installed(void **state)
{
    (void)state;
    char out[256], why[512];
    gp_error err;
    if (access("/usr/bin/crun", X_OK) != 0 && access("/usr/sbin/crun", X_OK) != 0)
        return;
    const gp_cgroup_layout layouts[] = {GP_CGROUP_V2, GP_CGROUP_NONE};
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(gp_container_runtime_choose(NULL, layouts[i], out, sizeof out, why, sizeof why, &err),
                         GP_OK);
        assert_non_null(strstr(out, "/crun"));
        assert_non_null(strstr(why, "crun, cgroups "));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_rule_is_kept_only_for_our_capabilities_architecture_and_kernel),
        cmocka_unit_test(new_user_namespaces_are_refused_unless_allowed),
        cmocka_unit_test(the_config_holds_namespaces_no_capability_limits_and_binds),
        cmocka_unit_test(a_mount_onto_proc_dev_or_through_dotdot_is_refused),
        cmocka_unit_test(cdi_edits_apply_to_the_assigned_devices_only),
        cmocka_unit_test(the_drivers_libraries_are_found_where_the_linker_looks),
        cmocka_unit_test(only_dir_images_run_here_and_a_bad_path_is_refused),
        cmocka_unit_test(the_runtime_is_runc_on_a_hybrid_host_unless_overridden),
        cmocka_unit_test(the_runtime_is_crun_on_a_v2_host_where_installed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* seccomp.c - the container default seccomp profile (Docker's format, as
 * golang-github-containers-common ships it in
 * /usr/share/containers/seccomp.json) resolved into an OCI runtime's
 * linux.seccomp for one architecture and one capability set, the way
 * podman and Docker resolve it:
 *
 *   {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38,
 *    "archMap": [{"architecture": "SCMP_ARCH_X86_64",
 *                 "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]}, ...],
 *    "syscalls": [{"names": [...], "action": "SCMP_ACT_ALLOW", "args": [...],
 *                  "includes": {"caps": [...], "arches": [...], "minKernel": "4.8"},
 *                  "excludes": {...}}, ...]}
 *
 * A rule is kept when every capability and architecture its includes
 * name is ours and the kernel is at least its minKernel, and none its
 * excludes name is (excludes.minKernel: dropped from that kernel on).
 * Kept: names, action, errnoRet, args.  architectures: the archMap entry
 * of ours, without its sub-architectures (below).
 *
 * New user namespaces: the profile allows clone, clone3 and unshare
 * without conditions (it counts on CAP_SYS_ADMIN for the rest), and an
 * unprivileged user may make a user namespace.  Unless allow_userns,
 * these three leave the allow lists and come back with the profile
 * format's own argument rules (as Docker's profile writes them): unshare
 * and clone allowed only when (flags & CLONE_NEWUSER) == 0 (EPERM
 * otherwise), clone3 ENOSYS (its flags are in memory a filter cannot
 * read; libc then falls back to clone).  The profile itself is never
 * edited: no deny-list of ours beyond these rules.
 */
#define _GNU_SOURCE
#include "agent/container/container.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

static bool gp__in(const json_t *array, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(array, i, v) {
        if (json_is_string(v) && strcmp(json_string_value(v), name) == 0)
            return true;
    }
    return false;
}

static bool gp__held(const char *const *caps, const char *cap)
{
    for (size_t i = 0; caps && caps[i]; i++)
        if (strcmp(caps[i], cap) == 0)
            return true;
    return false;
}

/* "5.8" <= the running kernel. */
static bool gp__kernel_at_least(const char *version)
{
    struct utsname u;
    unsigned want_major = 0, want_minor = 0, major = 0, minor = 0;
    if (uname(&u) != 0 || sscanf(version, "%u.%u", &want_major, &want_minor) < 1 ||
        sscanf(u.release, "%u.%u", &major, &minor) < 1)
        return true;
    return major > want_major || (major == want_major && minor >= want_minor);
}

/* Every name of a filter's caps and arches is ours (all=true: includes),
 * or any is (all=false: excludes). */
static bool gp__filter_matches(const json_t *f, const char *arch, const char *const *caps, bool all)
{
    const json_t *arches = json_object_get(f, "arches"), *fcaps = json_object_get(f, "caps");
    const char *kernel = json_string_value(json_object_get(f, "minKernel"));
    size_t i;
    json_t *v;
    bool any = false, every = true;
    if (json_array_size(arches)) {
        bool ours = gp__in(arches, arch);
        any |= ours;
        every &= ours;
    }
    json_array_foreach(fcaps, i, v) {
        bool held = json_is_string(v) && gp__held(caps, json_string_value(v));
        any |= held;
        every &= held;
    }
    if (kernel && kernel[0]) {
        bool new_enough = gp__kernel_at_least(kernel);
        any |= new_enough;
        every &= new_enough;
    }
    return all ? every : any;
}

static bool gp__rule_applies(const json_t *rule, const char *arch, const char *const *caps)
{
    return gp__filter_matches(json_object_get(rule, "includes"), arch, caps, true) &&
           !gp__filter_matches(json_object_get(rule, "excludes"), arch, caps, false);
}

static bool gp__userns_syscall(const char *name)
{
    return strcmp(name, "clone") == 0 || strcmp(name, "clone3") == 0 || strcmp(name, "unshare") == 0;
}

/* The OCI form of one kept rule; with !allow_userns, clone, clone3 and
 * unshare left out of its names (NULL when no name is left). */
static json_t *gp__oci_rule(const json_t *rule, bool allow_userns)
{
    json_t *names = json_array(), *v;
    size_t i;
    json_array_foreach(json_object_get(rule, "names"), i, v) {
        if (json_is_string(v) && (allow_userns || !gp__userns_syscall(json_string_value(v))))
            json_array_append(names, v);
    }
    if (!json_array_size(names)) {
        json_decref(names);
        return NULL;
    }
    json_t *out = json_pack("{s:o, s:O}", "names", names, "action", json_object_get(rule, "action"));
    json_t *errno_ret = json_object_get(rule, "errnoRet"), *args = json_object_get(rule, "args");
    if (json_is_integer(errno_ret))
        json_object_set(out, "errnoRet", errno_ret);
    if (json_array_size(args))
        json_object_set(out, "args", args);
    return out;
}

/* names allowed when (arg index & CLONE_NEWUSER) == 0, EPERM otherwise. */
static void gp__userns_rule(json_t *syscalls, const char *name, int index)
{
    json_int_t flag = CLONE_NEWUSER;
    json_array_append_new(syscalls, json_pack("{s:[s], s:s, s:[{s:i, s:I, s:I, s:s}]}", "names", name, "action",
                                              "SCMP_ACT_ALLOW", "args", "index", index, "value", flag, "valueTwo",
                                              (json_int_t)0, "op", "SCMP_CMP_MASKED_EQ"));
    json_array_append_new(syscalls, json_pack("{s:[s], s:s, s:i, s:[{s:i, s:I, s:I, s:s}]}", "names", name,
                                              "action", "SCMP_ACT_ERRNO", "errnoRet", EPERM, "args", "index", index,
                                              "value", flag, "valueTwo", flag, "op", "SCMP_CMP_MASKED_EQ"));
}

static void gp__userns_rules(json_t *syscalls, const char *arch)
{
    bool s390 = strcmp(arch, "s390") == 0 || strcmp(arch, "s390x") == 0; /* clone's flags come second there */
    gp__userns_rule(syscalls, "unshare", 0);
    gp__userns_rule(syscalls, "clone", s390 ? 1 : 0);
    json_array_append_new(syscalls, json_pack("{s:[s], s:s, s:i}", "names", "clone3", "action", "SCMP_ACT_ERRNO",
                                              "errnoRet", ENOSYS));
}

static const struct {
    const char *arch, *scmp;
} GP__ARCHES[] = {{"amd64", "SCMP_ARCH_X86_64"}, {"arm64", "SCMP_ARCH_AARCH64"}, {"ppc64le", "SCMP_ARCH_PPC64LE"},
                  {"s390x", "SCMP_ARCH_S390X"}, {"x86", "SCMP_ARCH_X86"},         {"arm", "SCMP_ARCH_ARM"}};

/* The archMap entry of arch: its architecture only.  The
 * sub-architectures (x86_64's i386 and x32 system call ABIs) are left out:
 * a training job has no 32-bit binaries, their ABIs are a second kernel
 * surface, and each doubles the filter runc must compile at every start
 * (measured: 20 ms of its ~90).  A 32-bit system call is then refused by
 * the runtime's bad-architecture action. */
static json_t *gp__architectures(const json_t *profile, const char *arch)
{
    const char *scmp = NULL;
    for (size_t i = 0; i < sizeof GP__ARCHES / sizeof GP__ARCHES[0]; i++)
        if (strcmp(GP__ARCHES[i].arch, arch) == 0)
            scmp = GP__ARCHES[i].scmp;
    json_t *out = json_array(), *entry;
    size_t i;
    json_array_foreach(json_object_get(profile, "archMap"), i, entry) {
        const char *name = json_string_value(json_object_get(entry, "architecture"));
        if (!scmp || !name || strcmp(name, scmp) != 0)
            continue;
        json_array_append_new(out, json_string(name));
    }
    return out;
}

const char *gp_seccomp_native_arch(void)
{
#if defined(__x86_64__)
    return "amd64";
#elif defined(__aarch64__)
    return "arm64";
#elif defined(__powerpc64__)
    return "ppc64le";
#elif defined(__s390x__)
    return "s390x";
#else
    return "unknown";
#endif
}

gp_err gp_seccomp_resolve(const json_t *profile, const char *arch, const char *const *caps, bool allow_userns,
                          json_t **out, gp_error *err)
{
    const json_t *action = json_object_get(profile, "defaultAction"), *rules = json_object_get(profile, "syscalls");
    if (!json_is_string(action) || !json_is_array(rules))
        return gp_error_set(err, GP_ERR_INVALID, "seccomp", "the profile has no defaultAction or no syscalls list");
    json_t *syscalls = json_array(), *rule;
    size_t i;
    json_array_foreach(rules, i, rule) {
        json_t *kept = gp__rule_applies(rule, arch, caps) ? gp__oci_rule(rule, allow_userns) : NULL;
        if (kept)
            json_array_append_new(syscalls, kept);
    }
    if (!allow_userns)
        gp__userns_rules(syscalls, arch);
    *out = json_pack("{s:O, s:o, s:o}", "defaultAction", action, "architectures", gp__architectures(profile, arch),
                     "syscalls", syscalls);
    json_t *errno_ret = json_object_get(profile, "defaultErrnoRet");
    if (*out && json_is_integer(errno_ret))
        json_object_set(*out, "defaultErrnoRet", errno_ret);
    return *out ? GP_OK : gp_error_set(err, GP_ERR_NOMEM, "seccomp", "out of memory");
}

/* probe.c - the two jobs of the isolation suite (tests/isolation): tenant
 * A's victim and tenant B's attacker, one static binary that runs in any
 * image (the suite's image is this binary and busybox).
 *
 *   probe victim PORT SECRET
 *     Listens on PORT on every address and answers SECRET to whoever
 *     connects; writes SECRET into its working folder (./victim-file) and
 *     its checkpoint folder ($GPUPOOL_CHECKPOINT_DIR/victim-file); then,
 *     every 200 ms until killed, looks for a file B planted in /tmp,
 *     /var/tmp or /dev/shm and prints "victim: saw planted FILE" when one
 *     is there.  Its command line and environment carry SECRET too (the
 *     suite submits it so).
 *
 *   probe attack
 *     Tries each attempt of docs/security.md's table against A, as B, and
 *     prints one line per attempt: "attempt NAME: blocked (what it saw)"
 *     or "attempt NAME: SUCCEEDED (what it got)"; exits 1 when any
 *     succeeded, else 0.  What it aims at comes from its environment (the
 *     suite puts what a hostile tenant could learn or guess there):
 *       SECRET        A's secret (what a success would read)
 *       A_PORT        A's port;  NODE_ADDRS  the node's addresses, spaces between
 *       A_PATHS       A's working folder, its checkpoint folder and its
 *                     log folder on the host, spaces between
 *       AGENT_PATHS   the agent's state folder and its node credential
 *       OTHER_DEVICE  the device nodes of a GPU assigned to A, not to B
 *       SERVER_URL    gpupoold's address (http://IPV4:PORT)
 *       MEM_LIMIT_MIB B's own memory limit (it tries to hold twice that)
 *
 * Bounded: the process-table attempt stops at 4,096 children, the memory
 * attempt runs in a child that the OOM killer may end.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int succeeded;

/* Where B plants a file for A to find. */
static const char *const PLANTED[] = {"/tmp/planted-by-b", "/var/tmp/planted-by-b", "/dev/shm/planted-by-b"};
enum { N_PLANTED = sizeof PLANTED / sizeof *PLANTED };

static void report(const char *name, int success, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    printf("attempt %s: %s (%s)\n", name, success ? "SUCCEEDED" : "blocked", what);
    fflush(stdout);
    succeeded |= success;
}

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

/* The first n bytes of path into buf (NUL-terminated); -1 with errno. */
static ssize_t read_file(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t got = read(fd, buf, n - 1);
    int e = errno;
    close(fd);
    errno = e;
    if (got >= 0)
        buf[got] = '\0';
    return got;
}

/* Whether buf[0..n) holds secret (files from /proc hold NULs). */
static int holds(const char *buf, ssize_t n, const char *secret)
{
    size_t len = strlen(secret);
    for (ssize_t i = 0; len && i + (ssize_t)len <= n; i++)
        if (memcmp(buf + i, secret, len) == 0)
            return 1;
    return 0;
}

/* ---- the victim ---- */

static void write_secret(const char *dir, const char *secret)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/victim-file", dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(secret, f);
        fclose(f);
    }
}

static void serve(int port, const char *secret)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int on = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 16) != 0) {
        printf("victim: cannot listen on %d: %s\n", port, strerror(errno));
        fflush(stdout);
        _exit(3);
    }
    printf("victim: listening on %d\n", port);
    fflush(stdout);
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0)
            continue;
        if (write(c, secret, strlen(secret)) < 0)
            printf("victim: write: %s\n", strerror(errno));
        close(c);
    }
}

static _Noreturn void victim(int port, const char *secret)
{
    write_secret(".", secret);
    if (getenv("GPUPOOL_CHECKPOINT_DIR"))
        write_secret(getenv("GPUPOOL_CHECKPOINT_DIR"), secret);
    if (fork() == 0)
        serve(port, secret);
    int seen[N_PLANTED] = {0};
    for (;;) {
        for (int i = 0; i < N_PLANTED; i++)
            if (!seen[i] && access(PLANTED[i], F_OK) == 0) {
                seen[i] = 1;
                printf("victim: saw planted %s\n", PLANTED[i]);
                fflush(stdout);
            }
        usleep(200 * 1000);
    }
}

/* ---- the attacker ---- */

/* Every process it can see whose command line or environment holds the
 * secret: A's processes, listed and read. */
static void attempt_processes(const char *secret)
{
    DIR *d = opendir("/proc");
    int visible = 0, cmdline = 0, environ_read = 0;
    struct dirent *e;
    char path[300], buf[65536];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        visible++;
        if (atoi(e->d_name) == getpid()) /* its own environment holds the secret it was given */
            continue;
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        ssize_t n = read_file(path, buf, sizeof buf);
        cmdline += n > 0 && holds(buf, n, secret);
        snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
        n = read_file(path, buf, sizeof buf);
        environ_read += n > 0 && holds(buf, n, secret);
    }
    if (d)
        closedir(d);
    report("list_processes", cmdline > 0, "%d processes visible, %d of them A's by their command line", visible,
           cmdline);
    report("read_environment", environ_read > 0, "%d environments holding A's secret", environ_read);
}

/* Whether path is an ancestor of (or is) mine: an empty folder the
 * runtime made in the container to bind one of the job's own folders at
 * its host path. */
static int leads_to_mine(const char *path, const char *mine)
{
    size_t n = strlen(path);
    return mine && strncmp(path, mine, n) == 0 && (mine[n] == '/' || mine[n] == '\0');
}

/* A folder listed: it shows an entry that is not on the way to the job's
 * own working or checkpoint folder (those the runtime made to bind them). */
static int lists_anything_not_its_own(const char *dir)
{
    char cwd[4096], entry[4400];
    const char *ckpt = getenv("GPUPOOL_CHECKPOINT_DIR");
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = '\0';
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(entry, sizeof entry, "%s/%s", dir, e->d_name);
        found += !leads_to_mine(entry, cwd) && !leads_to_mine(entry, ckpt);
    }
    if (d)
        closedir(d);
    return found > 0;
}

/* Each path of a space-separated list: read a file, list a folder, or
 * read the victim-file in it. */
static void attempt_paths(const char *name, const char *list, const char *secret)
{
    char copy[4096], buf[65536], file[4200];
    snprintf(copy, sizeof copy, "%s", list);
    int got = 0;
    char seen[600] = "";
    for (char *save = NULL, *p = strtok_r(copy, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
        struct stat st;
        int reached = 0;
        if (stat(p, &st) != 0) {
            snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s: %s; ", p, strerror(errno));
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            reached = lists_anything_not_its_own(p);
            snprintf(file, sizeof file, "%s/victim-file", p);
            ssize_t n = read_file(file, buf, sizeof buf);
            reached |= n > 0 && holds(buf, n, secret);
        } else {
            reached = read_file(p, buf, sizeof buf) >= 0;
        }
        got += reached;
        snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s: %s; ", p,
                 reached ? "read" : strerror(errno));
    }
    report(name, got > 0, "%s", seen[0] ? seen : "no path given");
}

static void attempt_plant(void)
{
    int made = 0;
    for (int i = 0; i < N_PLANTED; i++) {
        FILE *f = fopen(PLANTED[i], "w");
        if (f) {
            fputs("from B\n", f);
            fclose(f);
            made++;
        }
    }
    /* Planting in its own /tmp is allowed; whether A saw it is the victim's
     * log to say (the suite checks it). */
    printf("attempt plant_shared_file: planted %d of 3 (A's log says whether A saw any)\n", made);
    fflush(stdout);
}

static void attempt_device(const char *devices)
{
    char list[1024], seen[1024] = "";
    int opened = 0;
    snprintf(list, sizeof list, "%s", devices ? devices : "");
    for (char *save = NULL, *d = strtok_r(list, " ", &save); d; d = strtok_r(NULL, " ", &save)) {
        int fd = open(d, O_RDWR | O_CLOEXEC);
        int e = errno;
        if (fd >= 0)
            close(fd);
        /* ENXIO or ENODEV: the node was there and the device rules let it
         * through to a driver that is not loaded (a stand-in): a success. */
        opened += fd >= 0 || e == ENXIO || e == ENODEV;
        snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s: %s; ", d, fd >= 0 ? "opened" : strerror(e));
    }
    report("open_other_gpu", opened > 0, "%s", seen[0] ? seen : "no device named");
}

/* Connects to addr:port (2 s limits), sends request (NULL: nothing) and
 * reads the first answer into buf: its length, or -1 with errno. */
static ssize_t exchange(const char *addr, int port, const char *request, char *buf, size_t cap)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
        errno = EINVAL;
        return -1;
    }
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {.tv_sec = 2};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ssize_t n = -1;
    if (connect(s, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        (!request || write(s, request, strlen(request)) == (ssize_t)strlen(request)))
        n = read(s, buf, cap - 1);
    int e = errno;
    close(s);
    errno = e;
    buf[n > 0 ? n : 0] = '\0';
    return n;
}

/* Connect to A's port on each address; a success reads A's secret. */
static void attempt_connect(const char *port_s, const char *addrs, const char *secret)
{
    char list[2048], seen[1024] = "", buf[256];
    snprintf(list, sizeof list, "127.0.0.1 127.0.0.2 %s", addrs);
    int got = 0;
    for (char *save = NULL, *a = strtok_r(list, " ", &save); a; a = strtok_r(NULL, " ", &save)) {
        ssize_t n = exchange(a, atoi(port_s), NULL, buf, sizeof buf);
        int stole = n > 0 && holds(buf, n, secret);
        got += stole;
        snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s: %s; ", a,
                 stole ? "read A's secret" : n >= 0 ? "connected, nothing of A's" : strerror(errno));
    }
    report("connect_to_a", got > 0, "%s", seen);
}

static void attempt_privileges(void)
{
    int r = mount("none", "/mnt", "tmpfs", 0, NULL);
    report("mount", r == 0, "mount tmpfs: %s", r == 0 ? "mounted" : strerror(errno));
    r = (int)syscall(SYS_init_module, "", (unsigned long)0, "");
    report("load_module", r == 0 || errno == ENOEXEC || errno == EFAULT, "init_module: %s",
           r == 0 ? "loaded" : strerror(errno));
    int fd = open("/proc/sys/kernel/domainname", O_WRONLY | O_CLOEXEC);
    ssize_t w = fd >= 0 ? write(fd, "b", 1) : -1;
    int e = errno;
    if (fd >= 0)
        close(fd);
    report("sysctl", w == 1, "write /proc/sys/kernel/domainname: %s", w == 1 ? "written" : strerror(e));
    pid_t child = fork();
    if (child == 0) {
        r = unshare(CLONE_NEWUSER);
        _exit(r == 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    report("user_namespace", WIFEXITED(status) && WEXITSTATUS(status) == 0, "unshare(CLONE_NEWUSER): %s",
           WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "made one" : "refused");
}

/* ptrace every process it can see that is not its own or its parent's.
 * PTRACE_SEIZE stops nothing, and the child that seized exits at once,
 * which detaches it: run by mistake outside a container, this attempt
 * leaves no process of the host stopped. */
static void attempt_ptrace(void)
{
    pid_t self = getpid(), parent = getppid();
    pid_t child = fork();
    if (child == 0) {
        DIR *d = opendir("/proc");
        struct dirent *e;
        int tried = 0, seized = 0;
        while (d && (e = readdir(d))) {
            pid_t pid = (pid_t)atoi(e->d_name);
            if (pid <= 0 || pid == self || pid == parent || pid == getpid())
                continue;
            tried++;
            seized += ptrace(PTRACE_SEIZE, pid, NULL, NULL) == 0;
        }
        if (d)
            closedir(d);
        report("ptrace", seized > 0, "seized %d of %d other processes", seized, tried);
        _exit(seized > 0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    succeeded |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

/* A setuid binary anywhere it can see, run to become root. */
static void attempt_setuid(void)
{
    static const char *const dirs[] = {"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin"};
    int found = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        DIR *d = opendir(dirs[i]);
        struct dirent *e;
        char path[600];
        struct stat st;
        while (d && (e = readdir(d))) {
            snprintf(path, sizeof path, "%s/%s", dirs[i], e->d_name);
            found += stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & S_ISUID) && st.st_uid == 0;
        }
        if (d)
            closedir(d);
    }
    int root = setuid(0) == 0;
    report("setuid_root", root, "%d setuid-root binaries visible; setuid(0): %s", found,
           root ? "became root" : "refused");
}

/* Fork until refused (at most 4,096), then end them all. */
static void attempt_process_table(void)
{
    enum { MAX = 4096 };
    static pid_t kids[MAX];
    int n = 0;
    for (; n < MAX; n++) {
        kids[n] = fork();
        if (kids[n] == 0) {
            pause();
            _exit(0);
        }
        if (kids[n] < 0)
            break;
    }
    for (int i = 0; i < n; i++)
        kill(kids[i], SIGKILL);
    for (int i = 0; i < n; i++)
        waitpid(kids[i], NULL, 0);
    report("exhaust_processes", n >= MAX, "forked %d before the limit", n);
}

/* Touch twice its memory limit (MEM_LIMIT_MIB) in a child: a success is
 * a child that holds it all; the OOM killer ending the child is the limit
 * at work. */
static void attempt_memory(const char *limit_s)
{
    long limit = limit_s ? atol(limit_s) : 0;
    if (limit <= 0) {
        report("exhaust_memory", 0, "no limit given");
        return;
    }
    pid_t child = fork();
    if (child == 0) {
        for (long mib = 0; mib < 2 * limit; mib++) {
            char *p = malloc(1 << 20);
            if (!p)
                _exit(1);
            memset(p, 1, 1 << 20);
        }
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    int held = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    report("exhaust_memory", held, "%ld MiB touched against a %ld MiB limit: %s", 2 * limit, limit,
           held ? "all held" : WIFSIGNALED(status) ? "killed" : "refused");
}

/* Calls gpupoold (SERVER_URL, http://IPV4:PORT) for every job's listing,
 * first with no token, then with each value of its environment as the
 * bearer token: a success is a 200.  gpupoold not answering at all (the
 * network fence) ends the attempt at the first call. */
static void attempt_server(const char *url)
{
    char addr[64] = "", request[1024], buf[256];
    int port = 0, tried = 0, ok = 0;
    if (!url || sscanf(url, "http://%63[0-9.]:%d", addr, &port) != 2) {
        report("server_credentials", 0, "no server given");
        return;
    }
    snprintf(request, sizeof request, "GET /v1/jobs HTTP/1.0\r\n\r\n");
    ssize_t n = exchange(addr, port, request, buf, sizeof buf);
    if (n <= 0) {
        report("server_credentials", 0, "%s: no answer (%s)", url, strerror(errno));
        return;
    }
    for (char **e = environ; *e; e++) {
        const char *value = strchr(*e, '=');
        if (!value || strlen(value + 1) > 512 || strpbrk(value + 1, "\r\n"))
            continue;
        snprintf(request, sizeof request, "GET /v1/jobs HTTP/1.0\r\nAuthorization: Bearer %s\r\n\r\n", value + 1);
        tried++;
        ok += exchange(addr, port, request, buf, sizeof buf) > 0 && strncmp(buf, "HTTP/1.1 200", 12) == 0;
    }
    report("server_credentials", ok > 0, "%s answered; %d of %d values of its environment opened GET /v1/jobs", url,
           ok, tried);
}

static int attack(void)
{
    const char *secret = env_or("SECRET", "no-secret-given");
    attempt_processes(secret);
    attempt_paths("read_a_files", env_or("A_PATHS", ""), secret);
    attempt_paths("read_agent_state", env_or("AGENT_PATHS", ""), secret);
    attempt_plant();
    attempt_device(getenv("OTHER_DEVICE"));
    attempt_connect(env_or("A_PORT", "0"), env_or("NODE_ADDRS", ""), secret);
    attempt_privileges();
    attempt_ptrace();
    attempt_setuid();
    attempt_process_table();
    attempt_memory(getenv("MEM_LIMIT_MIB"));
    attempt_server(getenv("SERVER_URL"));
    printf("attack: %s\n", succeeded ? "SOME ATTEMPT SUCCEEDED" : "every attempt blocked");
    fflush(stdout);
    return succeeded ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "victim") == 0)
        victim(atoi(argv[2]), argv[3]);
    if (argc == 2 && strcmp(argv[1], "attack") == 0)
        return attack();
    fprintf(stderr, "usage: probe victim PORT SECRET | probe attack\n");
    return 2;
}

#include "datadir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "../geom/base.h"
#include "log.h"

#ifndef IOV_MAX /* POSIX guarantees at least 16; Linux has 1024 */
#define IOV_MAX 16
#endif

#define HEADER_LEN 64
#define SUB_LEN 24
/* A file larger than this is not one we wrote (limits cap meshes far below). */
#define MAX_FILE_BYTES ((uint64_t)1 << 40)

#define N_KINDS 5
static const char *const MAGIC[N_KINDS] = {"TDMMESH\0", "TDMSCENE", "TDMROBOT", "TDMRSCN\0", "TDMOWNRS"};
static const char *const SUBDIR[N_KINDS] = {"meshes", "scenes", "robots", "robot-scenes", "owners"};
static const char *const SUFFIX[N_KINDS] = {".mesh", ".scene", ".robot", ".rscene", ".owners"};

struct tdm_datadir {
    char *dir;
    int dir_fd, lock_fd;
    int kind_fd[N_KINDS];
    unsigned long counter; /* temporary file names (atomic: the writer and its builder thread) */
};

static int errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return TDM_EIO;
}

/* mkdir -p, for the data directory itself. */
static int make_dirs(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char c = buf[i];
        buf[i] = 0;
        if (mkdir(buf, 0750) != 0 && errno != EEXIST) return -1;
        buf[i] = c;
    }
    return 0;
}

static void remove_temps(tdm_datadir *p, int kind)
{
    int fd = dup(p->kind_fd[kind]);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, ".tmp-", 5) == 0) {
            if (unlinkat(p->kind_fd[kind], e->d_name, 0) == 0)
                tdm_log_info("removed %s/%s/%s left by an interrupted write", p->dir, SUBDIR[kind], e->d_name);
        }
    closedir(d);
}

int tdm_datadir_open(const char *dir, tdm_datadir **out, char *err, size_t errlen)
{
    *out = NULL;
    tdm_datadir *p = calloc(1, sizeof *p);
    if (!p) return errf(err, errlen, "out of memory"), TDM_ENOMEM;
    p->dir_fd = p->lock_fd = -1;
    for (int k = 0; k < N_KINDS; k++) p->kind_fd[k] = -1;
    p->dir = strdup(dir);
    if (!p->dir) {
        errf(err, errlen, "out of memory");
        goto fail;
    }
    if (make_dirs(dir) != 0) {
        errf(err, errlen, "data dir %s: cannot create it: %s", dir, strerror(errno));
        goto fail;
    }
    p->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (p->dir_fd < 0) {
        errf(err, errlen, "data dir %s: %s", dir, strerror(errno));
        goto fail;
    }
    p->lock_fd = openat(p->dir_fd, "LOCK", O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (p->lock_fd < 0) {
        errf(err, errlen, "data dir %s: cannot open LOCK: %s", dir, strerror(errno));
        goto fail;
    }
    if (flock(p->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) errf(err, errlen, "data dir %s is in use by another tandemd (its LOCK is held)", dir);
        else errf(err, errlen, "data dir %s: cannot lock LOCK: %s", dir, strerror(errno));
        goto fail;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(p->lock_fd, 0) != 0 || pwrite(p->lock_fd, pid, (size_t)n, 0) != n)
        tdm_log_warn("data dir %s: cannot write the pid into LOCK: %s", dir, strerror(errno));
    for (int k = 0; k < N_KINDS; k++) {
        if (mkdirat(p->dir_fd, SUBDIR[k], 0750) != 0 && errno != EEXIST) {
            errf(err, errlen, "data dir %s: cannot create %s/: %s", dir, SUBDIR[k], strerror(errno));
            goto fail;
        }
        p->kind_fd[k] = openat(p->dir_fd, SUBDIR[k], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (p->kind_fd[k] < 0) {
            errf(err, errlen, "data dir %s: %s/: %s", dir, SUBDIR[k], strerror(errno));
            goto fail;
        }
        remove_temps(p, k);
    }
    *out = p;
    return TDM_OK;
fail:
    tdm_datadir_close(p);
    return TDM_EIO;
}

void tdm_datadir_close(tdm_datadir *p)
{
    if (!p) return;
    for (int k = 0; k < N_KINDS; k++)
        if (p->kind_fd[k] >= 0) close(p->kind_fd[k]);
    if (p->lock_fd >= 0) close(p->lock_fd); /* releases the flock */
    if (p->dir_fd >= 0) close(p->dir_fd);
    free(p->dir);
    free(p);
}

static void file_name(int kind, const uint8_t id[TDM_ID_LEN], char *out, size_t outlen)
{
    char hex[2 * TDM_ID_LEN + 1];
    tdm_id_hex(id, hex);
    snprintf(out, outlen, "%s%s", hex, SUFFIX[kind]);
}

static int write_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = writev(fd, iov, n > IOV_MAX ? IOV_MAX : n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        size_t left = (size_t)w;
        while (n > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return 0;
}

int tdm_datadir_stage(tdm_datadir *p, tdm_datadir_kind kind, const uint8_t id[TDM_ID_LEN], const char *name,
                      const struct iovec *parts, int n_parts, const void *blob, size_t blob_len,
                      tdm_datadir_staged *out, char *err, size_t errlen)
{
    out->staged = 0;
    uint32_t name_len = (uint32_t)strlen(name);
    uint64_t canon_len = 0;
    for (int i = 0; i < n_parts; i++) canon_len += parts[i].iov_len;
    uint64_t blob_len64 = blob ? blob_len : 0;
    uint64_t payload_len = SUB_LEN + (uint64_t)name_len + canon_len + blob_len64;

    uint8_t header[HEADER_LEN] = {0}, sub[SUB_LEN] = {0};
    uint32_t version = TDM_DATADIR_VERSION, zero = 0;
    memcpy(header, MAGIC[kind], 8);
    memcpy(header + 8, &version, 4);
    memcpy(header + 16, &payload_len, 8);
    memcpy(sub, &name_len, 4);
    memcpy(sub + 4, &zero, 4);
    memcpy(sub + 8, &canon_len, 8);
    memcpy(sub + 16, &blob_len64, 8);

    int n_iov = 3 + n_parts + 1;
    struct iovec *iov = calloc((size_t)n_iov, sizeof *iov);
    if (!iov) return errf(err, errlen, "out of memory"), TDM_ENOMEM;
    int k = 0;
    iov[k++] = (struct iovec){header, HEADER_LEN};
    iov[k++] = (struct iovec){sub, SUB_LEN};
    iov[k++] = (struct iovec){(void *)name, name_len};
    for (int i = 0; i < n_parts; i++) iov[k++] = parts[i];
    iov[k++] = (struct iovec){(void *)blob, (size_t)blob_len64};

    /* checksum: header bytes [0, 32) then the payload */
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int dl = 0;
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) && EVP_DigestUpdate(ctx, header, 32);
    for (int i = 1; ok && i < n_iov; i++) ok = EVP_DigestUpdate(ctx, iov[i].iov_base, iov[i].iov_len);
    ok = ok && EVP_DigestFinal_ex(ctx, header + 32, &dl) && dl == 32;
    EVP_MD_CTX_free(ctx);
    if (!ok) {
        free(iov);
        return errf(err, errlen, "SHA-256 failed"), TDM_ENOMEM;
    }

    memset(out, 0, sizeof *out);
    out->kind = (int)kind;
    file_name(kind, id, out->final, sizeof out->final);
    snprintf(out->tmp, sizeof out->tmp, ".tmp-%s.%ld.%lu", out->final, (long)getpid(),
             __atomic_add_fetch(&p->counter, 1, __ATOMIC_RELAXED));
    int dfd = p->kind_fd[kind];
    int fd = openat(dfd, out->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (fd < 0) {
        free(iov);
        return errf(err, errlen, "cannot create %s/%s/%s: %s", p->dir, SUBDIR[kind], out->tmp, strerror(errno));
    }
    const char *step = "write";
    if (write_all(fd, iov, n_iov) != 0) goto fail;
    step = "fsync";
    if (fsync(fd) != 0) goto fail;
    step = "close";
    int cfd = fd;
    fd = -1;
    if (close(cfd) != 0) goto fail;
    free(iov);
    out->staged = 1;
    return TDM_OK;
fail:;
    int e = errno;
    if (fd >= 0) close(fd);
    unlinkat(dfd, out->tmp, 0);
    free(iov);
    return errf(err, errlen, "%s of %s/%s/%s failed: %s", step, p->dir, SUBDIR[kind], out->final, strerror(e));
}

int tdm_datadir_commit(tdm_datadir *p, tdm_datadir_staged *s, char *err, size_t errlen)
{
    int dfd = p->kind_fd[s->kind];
    s->staged = 0;
    if (renameat(dfd, s->tmp, dfd, s->final) != 0) {
        int e = errno;
        unlinkat(dfd, s->tmp, 0);
        return errf(err, errlen, "rename of %s/%s/%s failed: %s", p->dir, SUBDIR[s->kind], s->final, strerror(e));
    }
    if (fsync(dfd) != 0)
        return errf(err, errlen, "fsync of %s/%s/ failed after writing %s: %s", p->dir, SUBDIR[s->kind], s->final,
                    strerror(errno));
    return TDM_OK;
}

void tdm_datadir_unstage(tdm_datadir *p, tdm_datadir_staged *s)
{
    if (!s->staged) return;
    unlinkat(p->kind_fd[s->kind], s->tmp, 0);
    s->staged = 0;
}

int tdm_datadir_write(tdm_datadir *p, tdm_datadir_kind kind, const uint8_t id[TDM_ID_LEN], const char *name,
                      const struct iovec *parts, int n_parts, const void *blob, size_t blob_len, char *err,
                      size_t errlen)
{
    tdm_datadir_staged s;
    int rc = tdm_datadir_stage(p, kind, id, name, parts, n_parts, blob, blob_len, &s, err, errlen);
    return rc != TDM_OK ? rc : tdm_datadir_commit(p, &s, err, errlen);
}

int tdm_datadir_remove(tdm_datadir *p, tdm_datadir_kind kind, const uint8_t id[TDM_ID_LEN], char *err, size_t errlen)
{
    char final[128];
    file_name(kind, id, final, sizeof final);
    int dfd = p->kind_fd[kind];
    if (unlinkat(dfd, final, 0) != 0) {
        if (errno == ENOENT) return TDM_OK; /* nothing changed: nothing to make durable */
        return errf(err, errlen, "cannot remove %s/%s/%s: %s", p->dir, SUBDIR[kind], final, strerror(errno));
    }
    if (fsync(dfd) != 0)
        return errf(err, errlen, "fsync of %s/%s/ failed: %s", p->dir, SUBDIR[kind], strerror(errno));
    return TDM_OK;
}

int tdm_datadir_remove_aside(tdm_datadir *p, tdm_datadir_kind kind, const uint8_t id[TDM_ID_LEN],
                             tdm_datadir_staged *aside, char *err, size_t errlen)
{
    memset(aside, 0, sizeof *aside);
    aside->kind = (int)kind;
    file_name(kind, id, aside->final, sizeof aside->final);
    snprintf(aside->tmp, sizeof aside->tmp, ".tmp-rm-%s.%ld.%lu", aside->final, (long)getpid(),
             __atomic_add_fetch(&p->counter, 1, __ATOMIC_RELAXED));
    int dfd = p->kind_fd[kind];
    if (renameat(dfd, aside->final, dfd, aside->tmp) != 0) {
        if (errno == ENOENT) return TDM_OK; /* nothing changed: nothing to make durable */
        return errf(err, errlen, "cannot remove %s/%s/%s: %s", p->dir, SUBDIR[kind], aside->final, strerror(errno));
    }
    aside->staged = 1; /* even if the fsync fails: the name is gone, the file is to be unlinked */
    if (fsync(dfd) != 0)
        return errf(err, errlen, "fsync of %s/%s/ failed: %s", p->dir, SUBDIR[kind], strerror(errno));
    return TDM_OK;
}

/* Reads and checks one file; on success calls cb. Returns 0, or -1 after logging. */
static int load_one(tdm_datadir *p, int kind, const char *fname, const uint8_t id[TDM_ID_LEN],
                    int (*cb)(void *, const tdm_datadir_item *), void *ctx)
{
    char path[4600];
    snprintf(path, sizeof path, "%s/%s/%s", p->dir, SUBDIR[kind], fname);
    int fd = openat(p->kind_fd[kind], fname, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        tdm_log_error("skipping %s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    uint8_t *buf = NULL;
    char *name = NULL;
    const char *why = NULL;
    if (fstat(fd, &st) != 0) {
        why = strerror(errno);
        goto bad;
    }
    if (!S_ISREG(st.st_mode)) {
        why = "not a regular file";
        goto bad;
    }
    if ((uint64_t)st.st_size < HEADER_LEN + SUB_LEN || (uint64_t)st.st_size > MAX_FILE_BYTES) {
        why = "impossible size";
        goto bad;
    }
    size_t size = (size_t)st.st_size;
    buf = malloc(size);
    if (!buf) {
        why = "out of memory to read it";
        goto bad;
    }
    for (size_t got = 0; got < size;) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            why = r < 0 ? strerror(errno) : "file shrank while reading";
            goto bad;
        }
        got += (size_t)r;
    }
    uint32_t version;
    uint64_t payload_len;
    memcpy(&version, buf + 8, 4);
    memcpy(&payload_len, buf + 16, 8);
    if (memcmp(buf, MAGIC[kind], 8) != 0) {
        why = "bad magic";
        goto bad;
    }
    if (version != TDM_DATADIR_VERSION) {
        why = "unsupported format version";
        goto bad;
    }
    if (payload_len != size - HEADER_LEN) {
        why = "payload length does not match the file size (truncated?)";
        goto bad;
    }
    uint8_t sum[32];
    EVP_MD_CTX *mctx = EVP_MD_CTX_new();
    unsigned int dl = 0;
    int ok = mctx && EVP_DigestInit_ex(mctx, EVP_sha256(), NULL) && EVP_DigestUpdate(mctx, buf, 32) &&
             EVP_DigestUpdate(mctx, buf + HEADER_LEN, payload_len) && EVP_DigestFinal_ex(mctx, sum, &dl);
    EVP_MD_CTX_free(mctx);
    if (!ok || memcmp(sum, buf + 32, 32) != 0) {
        why = "checksum mismatch";
        goto bad;
    }
    const uint8_t *s = buf + HEADER_LEN;
    uint32_t name_len;
    uint64_t canon_len, blob_len;
    memcpy(&name_len, s, 4);
    memcpy(&canon_len, s + 8, 8);
    memcpy(&blob_len, s + 16, 8);
    if (canon_len > payload_len || blob_len > payload_len ||
        (uint64_t)SUB_LEN + name_len + canon_len + blob_len != payload_len || (kind != TDM_DATADIR_MESH && blob_len)) {
        why = "inconsistent lengths";
        goto bad;
    }
    name = malloc((size_t)name_len + 1);
    if (!name) {
        why = "out of memory";
        goto bad;
    }
    memcpy(name, s + SUB_LEN, name_len);
    name[name_len] = 0;
    tdm_datadir_item it = {.name = name, .path = path};
    memcpy(it.id, id, TDM_ID_LEN);
    it.canon = s + SUB_LEN + name_len;
    it.canon_len = (size_t)canon_len;
    it.blob = it.canon + canon_len;
    it.blob_len = (size_t)blob_len;
    uint8_t cid[TDM_ID_LEN];
    if (kind != TDM_DATADIR_OWNERS &&
        (tdm_sha256(it.canon, it.canon_len, cid) != 0 || memcmp(cid, id, TDM_ID_LEN) != 0)) {
        why = "content does not hash to the id in its name";
        goto bad;
    }
    close(fd);
    int rc = cb(ctx, &it); /* the callback logs its own reasons */
    free(name);
    free(buf);
    return rc;
bad:
    tdm_log_error("skipping %s: %s", path, why);
    close(fd);
    free(name);
    free(buf);
    return -1;
}

size_t tdm_datadir_load(tdm_datadir *p, tdm_datadir_kind kind, int (*cb)(void *ctx, const tdm_datadir_item *it),
                        void *ctx)
{
    size_t skipped = 0;
    int fd = dup(p->kind_fd[kind]);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        tdm_log_error("cannot list %s/%s/: %s", p->dir, SUBDIR[kind], strerror(errno));
        if (fd >= 0) close(fd);
        return 1;
    }
    rewinddir(d);
    size_t suffix_len = strlen(SUFFIX[kind]);
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0) continue;
        char hex[2 * TDM_ID_LEN + 1];
        uint8_t id[TDM_ID_LEN];
        size_t len = strlen(n);
        if (len != 2 * TDM_ID_LEN + suffix_len || strcmp(n + 2 * TDM_ID_LEN, SUFFIX[kind]) != 0) {
            tdm_log_warn("ignoring %s/%s/%s: not a name tandemd writes", p->dir, SUBDIR[kind], n);
            continue;
        }
        memcpy(hex, n, 2 * TDM_ID_LEN);
        hex[2 * TDM_ID_LEN] = 0;
        if (tdm_id_parse(hex, id) != 0) {
            tdm_log_warn("ignoring %s/%s/%s: not a name tandemd writes", p->dir, SUBDIR[kind], n);
            continue;
        }
        if (load_one(p, kind, n, id, cb, ctx) != 0) skipped++;
    }
    closedir(d);
    return skipped;
}

int tdm_datadir_read(tdm_datadir *p, tdm_datadir_kind kind, const uint8_t id[TDM_ID_LEN],
                     int (*cb)(void *ctx, const tdm_datadir_item *it), void *ctx)
{
    char fname[128];
    file_name(kind, id, fname, sizeof fname);
    return load_one(p, kind, fname, id, cb, ctx);
}

int tdm_datadir_exists(tdm_datadir *p, tdm_datadir_kind kind, const uint8_t id[TDM_ID_LEN])
{
    char fname[128];
    struct stat st;
    file_name(kind, id, fname, sizeof fname);
    return fstatat(p->kind_fd[kind], fname, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/*
 * Preloaded (LD_PRELOAD) into every command of a gVisor sandbox.
 *
 * runsc 20221219 (Debian 12's) answers EINVAL to statx(2) and fstatat(2)
 * calls that pass AT_NO_AUTOMOUNT, so coreutils' ls and stat fail on any
 * path ("cannot access '/': Invalid argument"); glibc's own fallback for
 * statx passes the flag on to fstatat, which refuses it too. The flag only
 * keeps a call from triggering an automount, and gVisor has no automount
 * points, so clearing it changes no answer. Later runsc accepts it.
 *
 * No libc is linked (-nostdlib): the calls are made directly, so the same
 * file loads under glibc or musl; only __errno_location, which both export,
 * comes from the program's libc.
 */

#define AT_NO_AUTOMOUNT 0x800
#define SYS_NEWFSTATAT 262
#define SYS_STATX 332

struct statx;
struct stat;

extern int *__errno_location(void);

static long call4(long nr, long a, long b, long c, long d)
{
    long ret;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
                     : "rcx", "r11", "memory");
    return ret;
}

static long call5(long nr, long a, long b, long c, long d, long e)
{
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
    return ret;
}

/* The kernel's -errno convention turned into libc's -1 and errno. */
static int result(long ret)
{
    if (ret < 0 && ret > -4096) {
        *__errno_location() = (int)-ret;
        return -1;
    }
    return (int)ret;
}

int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf)
{
    return result(call5(SYS_STATX, dirfd, (long)path, flags & ~AT_NO_AUTOMOUNT, mask, (long)buf));
}

/* On x86_64 libc's struct stat is the kernel's, so newfstatat fills it. */
int fstatat(int dirfd, const char *path, struct stat *buf, int flags)
{
    return result(call4(SYS_NEWFSTATAT, dirfd, (long)path, (long)buf, flags & ~AT_NO_AUTOMOUNT));
}

int fstatat64(int dirfd, const char *path, struct stat *buf, int flags)
{
    return fstatat(dirfd, path, buf, flags);
}

/*
 * The kernel's floor for the namespace layer: what a command costs when
 * the only work is the layer's system calls, with nothing of dsh around
 * them. Compare its two lines with `cargo bench -p dsh-benches --bench
 * sandbox` (issue 34's closing note quotes both).
 *
 *   cc -O2 -o /tmp/namespace_floor benches/native/namespace_floor.c
 *   /tmp/namespace_floor      # as root or with unprivileged user namespaces
 *
 * Per run, 300 times, 20 ms apart (as between a model's tool calls):
 *   host:      fork, execve("/usr/bin/true") in the child;
 *   namespace: fork, then what the layer does in the child (unshare user,
 *              mount, PID and IPC namespaces, id maps, a read-only view
 *              with /tmp writable, a devpts instance), clone(CLONE_VM) an
 *              init that mounts /proc and vfork-clones the command, which
 *              executes /usr/bin/true.
 * "spawn" is until the program runs (the parent learns it through a
 * close-on-exec pipe), "total" until the forked child is reaped.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void write_file(const char *path, const char *data) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, data, strlen(data)) < 0) _exit(1);
  close(fd);
}

static char *argv_true[] = {"true", NULL};
static char *envp_none[] = {NULL};
static char *command_stack;
static int report[2];
/* The write end of the parent's "started" pipe: the init closes its copy. */
static int started_write = -1;

static int command_main(void *arg) {
  (void)arg;
  execve("/usr/bin/true", argv_true, envp_none);
  _exit(127);
}

static int init_main(void *arg) {
  (void)arg;
  close(started_write);
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)) _exit(1);
  pid_t command = clone(command_main, command_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
  int ok = command > 0 ? 0 : 1;
  if (write(report[1], &ok, sizeof ok) < 0) _exit(1);
  waitpid(command, NULL, 0);
  _exit(0);
}

static void layer_then_true(char *init_stack) {
  char map[64];
  snprintf(map, sizeof map, "%d %d 1\n", getuid(), getuid());
  char gmap[64];
  snprintf(gmap, sizeof gmap, "%d %d 1\n", getgid(), getgid());
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC)) _exit(1);
  write_file("/proc/self/setgroups", "deny");
  write_file("/proc/self/uid_map", map);
  write_file("/proc/self/gid_map", gmap);
  mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL);
  int tmp = syscall(SYS_open_tree, AT_FDCWD, "/tmp", 1 /* CLONE */ | 0x8000 | O_CLOEXEC);
  struct { unsigned long long set, clr, prop, userns; } rdonly = {1, 0, 0, 0};
  syscall(SYS_mount_setattr, AT_FDCWD, "/", 0x8000 /* AT_RECURSIVE */, &rdonly, sizeof rdonly);
  syscall(SYS_move_mount, tmp, "", AT_FDCWD, "/tmp", 4 /* F_EMPTY_PATH */);
  mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666");
  mount("/dev/pts/ptmx", "/dev/ptmx", NULL, MS_BIND, NULL);
  if (pipe2(report, O_CLOEXEC)) _exit(1);
  pid_t init = clone(init_main, init_stack, CLONE_VM | SIGCHLD, NULL);
  close(report[1]);
  int ok = 1;
  if (init < 0 || read(report[0], &ok, sizeof ok) != sizeof ok || ok) _exit(1);
}

int main(void) {
  char *stacks = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  char *init_stack = stacks + (512 << 10);
  command_stack = stacks + (1 << 20);
  for (int layer = 0; layer <= 1; layer++) {
    const int runs = 300;
    double spawn = 0, total = 0;
    for (int i = 0; i < runs; i++) {
      int started[2];
      if (pipe2(started, O_CLOEXEC)) return 1;
      double t0 = now_us();
      pid_t child = fork();
      if (child == 0) {
        close(started[0]);
        started_write = started[1];
        if (layer) {
          layer_then_true(init_stack);
          close(started[1]); /* the command runs: tell the parent */
          waitpid(-1, NULL, 0);
          _exit(0);
        }
        execve("/usr/bin/true", argv_true, envp_none);
        _exit(127);
      }
      close(started[1]);
      char byte;
      if (read(started[0], &byte, 1) < 0) return 1;
      double t1 = now_us();
      close(started[0]);
      int status;
      waitpid(child, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "run failed (status %#x): no user namespaces here?\n", status);
        return 1;
      }
      double t2 = now_us();
      spawn += t1 - t0;
      total += t2 - t0;
      usleep(20000);
    }
    printf("%-9s spawn %5.0f us, total %5.0f us (mean of %d)\n",
           layer ? "namespace" : "host", spawn / runs, total / runs, runs);
  }
  return 0;
}

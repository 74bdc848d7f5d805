#ifndef CNET_SHIM_H
#define CNET_SHIM_H
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
// accept4 is declared only under _GNU_SOURCE, which would also turn the sockaddr parameters of
// accept/bind/connect into a transparent union Swift cannot pass. Declare it on its own.
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addr_len, int flags);
// Also _GNU_SOURCE only (glibc 2.27+, 2.29+, 2.34+): a child's pipes made close-on-exec in one
// step, and a spawned child's working directory and closing of every inherited descriptor.
extern int pipe2(int fds[2], int flags);
extern int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *actions, const char *path);
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
#endif

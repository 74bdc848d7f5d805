#ifndef CNET_SHIM_H
#define CNET_SHIM_H
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
// accept4 is declared only under _GNU_SOURCE, which would also turn the sockaddr parameters of
// accept/bind/connect into a transparent union Swift cannot pass. Declare it on its own.
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addr_len, int flags);
#endif

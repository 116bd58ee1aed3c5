/*
 * loopback_bind: an LD_PRELOAD library that turns every bind() to the wildcard address into a
 * bind() to loopback, for the test harness's RocketMQ 5.x processes.
 *
 * RocketMQ 5.x binds three listeners to every interface with no setting to change it: the
 * broker's HA port (new InetSocketAddress(port)) and the proxy's gRPC and remoting ports. The
 * tests must listen on 127.0.0.1 only, so those processes start with this library preloaded:
 * 0.0.0.0 becomes 127.0.0.1, and :: (or ::ffff:0.0.0.0) becomes ::ffff:127.0.0.1, which an
 * IPv4 client reaches at 127.0.0.1 on a dual-stack socket. Any other address is left alone.
 *
 * It also refuses every TCP or UDP connect() to an address that is not loopback, at once, with
 * ECONNREFUSED, as the kernel would answer for a port nobody listens on: a 5.x NameServer gives
 * its own remoting client "this host's address:its port" (NamesrvController.start, from
 * NetworkUtil.getLocalAddress(), which skips loopback) and connects there every 3 s. The tests
 * talk to 127.0.0.1 only; so do the processes they start.
 * Built by routewatch/testing/loopback.py with the system's C compiler; never committed built.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_function)(int, const struct sockaddr *, socklen_t);

static int is_v4_any_mapped(const struct in6_addr *a) {
    static const unsigned char prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(a->s6_addr, prefix, 12) == 0 && a->s6_addr[12] == 0 && a->s6_addr[13] == 0 &&
           a->s6_addr[14] == 0 && a->s6_addr[15] == 0;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    static bind_function real_bind;
    if (real_bind == NULL) {
        real_bind = (bind_function)dlsym(RTLD_NEXT, "bind");
    }
    if (addr != NULL && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in v4;
        memcpy(&v4, addr, sizeof v4);
        if (v4.sin_addr.s_addr == htonl(INADDR_ANY)) {
            v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            return real_bind(fd, (const struct sockaddr *)&v4, sizeof v4);
        }
    } else if (addr != NULL && addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 v6;
        memcpy(&v6, addr, sizeof v6);
        if (IN6_IS_ADDR_UNSPECIFIED(&v6.sin6_addr) || is_v4_any_mapped(&v6.sin6_addr)) {
            memset(v6.sin6_addr.s6_addr, 0, 16);
            v6.sin6_addr.s6_addr[10] = 0xff;
            v6.sin6_addr.s6_addr[11] = 0xff;
            v6.sin6_addr.s6_addr[12] = 127;
            v6.sin6_addr.s6_addr[15] = 1;
            return real_bind(fd, (const struct sockaddr *)&v6, sizeof v6);
        }
    }
    return real_bind(fd, addr, len);
}

typedef int (*connect_function)(int, const struct sockaddr *, socklen_t);

static int is_loopback(const struct sockaddr *addr, socklen_t len) {
    if (addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in v4;
        memcpy(&v4, addr, sizeof v4);
        return (ntohl(v4.sin_addr.s_addr) >> 24) == 127;
    }
    if (addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 v6;
        memcpy(&v6, addr, sizeof v6);
        return IN6_IS_ADDR_LOOPBACK(&v6.sin6_addr) ||
               (IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr) && v6.sin6_addr.s6_addr[12] == 127);
    }
    return 1; /* not an IP socket (a Unix one, AF_UNSPEC to dissolve an association) */
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    static connect_function real_connect;
    if (real_connect == NULL) {
        real_connect = (connect_function)dlsym(RTLD_NEXT, "connect");
    }
    if (addr != NULL && !is_loopback(addr, len)) {
        errno = ECONNREFUSED;
        return -1;
    }
    return real_connect(fd, addr, len);
}

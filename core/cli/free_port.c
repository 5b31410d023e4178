/* free_port.c — a TCP port nobody listens on right now, for MASTER_PORT
 * of a local job (torchrun does the same; a tiny race remains). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dt/log.h>
#include "run_env.h"

dt_status_t run_free_port(const char *addr, int *port)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = 0;
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        return DT_ERR_INVALID;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto fail;
    socklen_t len = sizeof sa;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        goto fail;
    close(fd);
    *port = ntohs(sa.sin_port);
    return DT_OK;
fail:
    dt_error("cannot find a free TCP port on %s for MASTER_PORT: %s", addr,
             strerror(errno));
    if (fd >= 0)
        close(fd);
    return DT_ERR_IO;
}

int run_port_taken(const char *addr, int port)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        return 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int one = 1; /* a closed job's TIME_WAIT does not stop a listener */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int taken = bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 &&
                errno == EADDRINUSE;
    close(fd);
    return taken;
}

/* mem_room.h — run a loader in a child process whose address space may
 * grow by `room` bytes only (RLIMIT_AS over its VmSize now): the
 * out-of-memory paths on the real allocator (test_data, test_data_images).
 * Not under ASan, which reserves terabytes of address space. Include after
 * cmocka.h and stderr_capture.h. */
#ifndef DT_TESTS_MEM_ROOM_H
#define DT_TESTS_MEM_ROOM_H

#ifndef __SANITIZE_ADDRESS__
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dt/status.h>
#include "base/proc_status.h" /* VmSize */

/* fn's status, run in a child whose address space may grow by `room`
 * bytes only (free heap and reserved arenas it has may add some: keep
 * the allocation far larger); what it logged into *log. */
static inline dt_status_t with_room(dt_status_t (*fn)(void), size_t room,
                                    char **log)
{
    capture_t c;
    capture_begin(&c);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        size_t vm = (size_t)dt_proc_mapped_bytes();
        struct rlimit lim = {vm + room, vm + room};
        if (vm == 0 || setrlimit(RLIMIT_AS, &lim) != 0)
            _exit(100);
        dt_status_t st = fn();
        fflush(stderr);
        _exit(-st);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    *log = capture_end(&c);
    assert_true(WIFEXITED(status));
    assert_int_not_equal(WEXITSTATUS(status), 100);
    return (dt_status_t)-WEXITSTATUS(status);
}
#endif
#endif /* DT_TESTS_MEM_ROOM_H */

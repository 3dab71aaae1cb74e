#ifndef C_SPLICE_H
#define C_SPLICE_H
// Linux pipe and splice calls that Glibc declares only under _GNU_SOURCE, which the Swift Glibc
// module is built without: splice(2), pipe2(2), and the fcntl commands F_SETPIPE_SZ and
// F_GETPIPE_SZ with the SPLICE_F_* flags (macros). One-line wrappers, built with _GNU_SOURCE.

#include <sys/types.h>

/// pipe2(descriptors, O_CLOEXEC | O_NONBLOCK): 0, or -1 with errno.
int CSplice_pipe(int descriptors[2]);

/// splice(from, NULL, to, NULL, length, SPLICE_F_MOVE | SPLICE_F_NONBLOCK): bytes moved, 0 at the
/// end of `from`'s stream, or -1 with errno.
ssize_t CSplice_move(int from, int to, size_t length);

/// fcntl(descriptor, F_SETPIPE_SZ, size): the size the kernel chose (at least `size`), or -1.
int CSplice_set_pipe_size(int descriptor, int size);

/// fcntl(descriptor, F_GETPIPE_SZ): the pipe's capacity in bytes, or -1.
int CSplice_pipe_size(int descriptor);

#endif

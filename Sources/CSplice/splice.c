#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>
#include "CSplice.h"

int CSplice_pipe(int descriptors[2]) { return pipe2(descriptors, O_CLOEXEC | O_NONBLOCK); }

ssize_t CSplice_move(int from, int to, size_t length) {
    return splice(from, NULL, to, NULL, length, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
}

int CSplice_set_pipe_size(int descriptor, int size) { return fcntl(descriptor, F_SETPIPE_SZ, size); }

int CSplice_pipe_size(int descriptor) { return fcntl(descriptor, F_GETPIPE_SZ); }

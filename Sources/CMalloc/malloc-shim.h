#ifndef C_MALLOC_SHIM_H
#define C_MALLOC_SHIM_H
// malloc_trim(3) is a function, not a macro: no wrapper is needed, only the declaration, which
// Glibc's Swift module does not import (it has no <malloc.h>).
#include <malloc.h>
#endif

// glibc's allocator controls (malloc_trim), which Glibc's Swift module leaves out.
#include <malloc.h>

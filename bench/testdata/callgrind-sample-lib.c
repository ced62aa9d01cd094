/* A tiny shared object standing in for a module (see make-callgrind-sample): the self cost of
   its functions is what parse_callgrind must attribute to it. */
#include <string.h>
unsigned long mix(unsigned long x) {
    for (int i = 0; i < 100; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}
unsigned long work(const char *s) {
    unsigned long h = strlen(s); /* a call out of the object, into libc */
    for (int i = 0; i < 10; i++) h = mix(h + i);
    return h;
}

/* The program run under callgrind to make callgrind-sample.out (see make-callgrind-sample). */
#include <stdio.h>
unsigned long work(const char *s);
int main(void) {
    unsigned long h = 0;
    for (int i = 0; i < 3; i++) h ^= work("item:000001");
    printf("%lu\n", h);
    return 0;
}

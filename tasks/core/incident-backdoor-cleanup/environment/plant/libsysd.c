/* The intruder's preloaded library: records every process start (a stand-in for a keylogger). */
#include <stdio.h>
#include <unistd.h>
#include <sys/stat.h>
__attribute__((constructor)) static void sysd_init(void) {
    mkdir("/tmp/.sysd", 0777);
    FILE *f = fopen("/tmp/.sysd/procs.log", "a");
    if (f) { fprintf(f, "%d\n", (int)getpid()); fclose(f); }
}

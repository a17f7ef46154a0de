/* netcalc - IPv4 subnet calculator.
 * usage: netcalc ADDRESS/PREFIX ...
 * Reads /etc/netcalc.conf (or $NETCALC_CONF): "show_hosts = yes|no". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

static int show_hosts = 1;

static void load_config(void) {
    const char *path = getenv("NETCALC_CONF");
    FILE *f = fopen(path ? path : SYSCONFDIR "/netcalc.conf", "r");
    if (!f) return;
    char line[256], key[64], val[64];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        if (sscanf(line, " %63[a-z_] = %63s", key, val) == 2 && strcmp(key, "show_hosts") == 0)
            show_hosts = strcmp(val, "yes") == 0;
    }
    fclose(f);
}

static void show(const char *label, unsigned long v) {
    struct in_addr a;
    a.s_addr = htonl((uint32_t)v);
    printf("%-10s %s\n", label, inet_ntoa(a));
}

static int calc(const char *arg) {
    char buf[64];
    unsigned prefix;
    struct in_addr addr;
    const char *slash = strchr(arg, '/');
    if (!slash || (size_t)(slash - arg) >= sizeof buf) return 1;
    memcpy(buf, arg, slash - arg);
    buf[slash - arg] = '\0';
    if (inet_pton(AF_INET, buf, &addr) != 1) return 1;
    char *end;
    prefix = strtoul(slash + 1, &end, 10);
    if (*end || end == slash + 1 || prefix > 32) return 1;
    unsigned long ip = ntohl(addr.s_addr);
    unsigned long mask = prefix ? (0xFFFFFFFFUL << (32 - prefix)) & 0xFFFFFFFFUL : 0;
    unsigned long net = ip & mask, bcast = net | (~mask & 0xFFFFFFFFUL);
    printf("%s\n", arg);
    show("network", net);
    show("netmask", mask);
    show("broadcast", bcast);
    if (prefix <= 30) {
        show("first", net + 1);
        show("last", bcast - 1);
    } else {
        show("first", net);
        show("last", bcast);
    }
    if (show_hosts) {
        unsigned long long hosts = prefix == 32 ? 1 : prefix == 31 ? 2 : (1ULL << (32 - prefix)) - 2;
        printf("%-10s %llu\n", "hosts", hosts);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: netcalc ADDRESS/PREFIX ...\n");
        return 2;
    }
    load_config();
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        if (calc(argv[i])) {
            fprintf(stderr, "netcalc: invalid network '%s'\n", argv[i]);
            rc = 1;
        }
    }
    return rc;
}

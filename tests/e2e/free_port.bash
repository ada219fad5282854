# free_port.bash - sourced by the e2e scripts that serve HTTP or run Slurm's daemons:
#   free_port [AVOID...]
#               prints a TCP port that nothing listens on now (on any IPv4 address, nor on
#               IPv6's loopback), picked at random outside the kernel's ephemeral range
#               (ip_local_port_range), and none of the ports AVOID: a port the kernel picked
#               (bind to 0) went back to that range when the picker closed it, and any connect
#               of the suites running beside it (tests/run-all.sh) could take it as its local
#               port before the server bound it. Where the ephemeral range leaves no room
#               (1024-65535), the kernel's pick, as before.
free_port() {
    python3 - "$@" <<'PY'
import errno, random, socket, sys
avoid = {int(a) for a in sys.argv[1:] if a.isdigit()}
try:
    low, high = (int(x) for x in open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
except (OSError, ValueError):
    low, high = 32768, 60999
ranges = [r for r in ((10000, low - 1), (high + 1, 65535)) if r[1] - r[0] >= 1000]

def free(port):
    for family, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::1")):
        try:
            s = socket.socket(family)
        except OSError:
            continue  # no IPv6 here
        try:
            s.bind((addr, port))
        except OSError as e:
            if e.errno != errno.EADDRNOTAVAIL:  # ::1 missing is no listener
                return False
        finally:
            s.close()
    return True

for _ in range(200 if ranges else 0):
    first, last = random.choice(ranges)
    port = random.randint(first, last)
    if port not in avoid and free(port):
        print(port)
        break
else:
    while True:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if port not in avoid:
            print(port)
            break
PY
}

# free_port.bash - sourced by the e2e scripts that serve HTTP or run Slurm's daemons:
#   free_port   prints a TCP port of 127.0.0.1 that nothing listens on now, picked at random
#               below the kernel's ephemeral range (ip_local_port_range): a port the kernel
#               picked (bind to 0) went back to that range when the picker closed it, and any
#               connect of the suites running beside it (tests/run-all.sh) could take it as
#               its local port before the server bound it
free_port() {
    python3 - <<'PY'
import random, socket
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    low = 32768
low = max(low, 2048)
for _ in range(200):
    port = random.randrange(1024 if low <= 10000 else 10000, low)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
else:  # the range below is all taken: the kernel's pick, as before
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
PY
}

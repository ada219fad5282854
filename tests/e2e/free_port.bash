# free_port.bash - sourced by the e2e scripts that serve HTTP or run Slurm's daemons:
#   free_port   prints a TCP port of 127.0.0.1 that nothing listens on now (the kernel's pick,
#               so that suites running at once, tests/run-all.sh, do not pick the same one)
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

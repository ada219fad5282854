# reachable.bash - sourced by the e2e scripts that run carve's programs as another user
# (nobody). A checkout in root's home (/root is 0700 on Debian) cannot be reached by that
# user through an absolute path, so libcarve.so in LD_PRELOAD, the one `carve run` finds
# beside itself, or a program a Slurm job runs would fail to load for reasons that have
# nothing to do with what the test checks.
#
#   reachable_build BUILD DEST   prints an absolute build directory that uid 65534 can read:
#                                BUILD itself when it can, else a copy of it made in DEST
#                                (which the caller removes)
reachable_build() {
    local abs
    abs=$(cd "$1" && pwd) || return 1
    if setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$abs/lib/carve/libcarve.so" 2>/dev/null; then
        echo "$abs"
        return 0
    fi
    mkdir -p "$2" && chmod 755 "$2" && cp -a "$abs/bin" "$abs/lib" "$abs/bench" "$abs/tests" "$2/" || return 1
    chmod -R o+rX "$2"
    echo "$2"
}

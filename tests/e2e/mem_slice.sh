#!/usr/bin/env bash
# clang: yes (the interposer as clang built it; docs/internals.md)
# mem_slice.sh - libcarve's memory caps end to end on the simulated GPU.
#
#   BUILD=build bash tests/e2e/mem_slice.sh
#
# Runs the mem_* programs inside a 4 GiB slice made by `carve run --simulate`. Checks the three resolution paths, concurrency, SIGKILL recovery, nvidia-smi's view,
# per-device caps under a reordered CUDA_VISIBLE_DEVICES, and that the shm object is gone.
# Each check prints a line; the last line is `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
BUILD=${BUILD%/}
E2E=$BUILD/tests/e2e
LIB=$BUILD/lib/carve
SIM=$LIB/sim
CARVE=$BUILD/bin/carve
GIB=$((1024 * 1024 * 1024))
passed=0
failed=0

check() { # check NAME RC
    if [ "$2" -eq 0 ]; then echo "ok - $1"; passed=$((passed + 1)); else echo "FAIL - $1"; failed=$((failed + 1)); fi
}

for f in "$CARVE" "$LIB/libcarve.so" "$SIM/libcuda.so.1" "$SIM/libnvidia-ml.so.1" "$E2E/mem_direct"; do
    if [ ! -e "$f" ]; then echo "FAIL - $f is missing: run make BUILD=$BUILD"; echo "0 passed, 1 failed"; exit 1; fi
done

state_dir=$(mktemp -d)
trap 'rm -rf "$state_dir"' EXIT
export CARVE_SIM_STATE=$state_dir/sim-state

shm_list() { find /dev/shm -maxdepth 1 -name 'carve.*' -printf '%f\n' 2>/dev/null | sort; }

# in_slice MEMSPEC CMD...: run CMD inside a fresh slice with caps MEMSPEC.
in_slice() {
    local mem=$1
    shift
    "$CARVE" run --simulate --memory "$mem" -- "$@"
}

shm_before=$(shm_list)
export MEM_CAP=$((4 * GIB))

for prog in mem_direct mem_dlsym mem_gpa; do
    out=$(in_slice 4GiB "$E2E/$prog" 2>"$state_dir/err")
    rc=$?
    echo "$out" | sed 's/^/    /'
    check "$prog: every counted API, the slice's view, over-cap denials, usage back to start" "$rc"
    oom=$(grep -Ec '^carve: slice ".*" out of memory on GPU 0: cap 4 GiB, in use .*, requested .*$' "$state_dir/err")
    other=$(grep -vc '^carve: slice ".*" out of memory on GPU 0: cap 4 GiB' "$state_dir/err")
    check "$prog: one OOM line per denial on stderr ($oom lines, $other others)" \
        "$([ "$oom" -ge 8 ] && [ "$other" -eq 0 ]; echo $?)"
done

# a process out of file descriptors at its first CUDA call cannot open its slice: it was told
# it had outlived its `carve run` (until 2026-11-27)
out=$(in_slice 4GiB "$E2E/fd_starved" 0 2>&1)
echo "$out" | grep '^carve:' | sed 's/^/    /'
check "no fd free to open the slice: told so, no context" \
    "$([[ $out == *"no free file descriptor to open the slice with (RLIMIT_NOFILE 64)"* ]] && [[ $out != *"context 0"* ]]; echo $?)"

CARVE_QUIET=1 in_slice 4GiB "$E2E/mem_direct" >/dev/null 2>"$state_dir/err"
check "CARVE_QUIET=1: nothing on stderr ($(wc -l <"$state_dir/err") lines)" "$([ ! -s "$state_dir/err" ]; echo $?)"

out=$(CARVE_SIM_CTX_MEMORY=0 in_slice 4GiB "$E2E/mem_stress" 2>&1)
rc=$?
echo "$out" | grep -v '^ok' | sed 's/^/    /'
check "mem_stress: 64 processes x 4 threads, usage never above the cap" "$rc"

out=$(in_slice 4GiB "$E2E/mem_kill" 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
check "mem_kill: memory of a SIGKILLed tenant, and of an image before an exec, comes back" "$rc"

out=$(CARVE_SIM_CTX_MEMORY=0 timeout 120 "$CARVE" run --simulate --memory 1GiB -- "$E2E/mem_slots" 2>&1)
rc=$?
echo "$out" | grep -v '^ok' | sed 's/^/    /'
check "mem_slots: with every slot taken, one process more gets no GPU, not an uncapped one" "$rc"

out=$(in_slice 4GiB nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>&1)
check "nvidia-smi inside a 4 GiB slice reports memory.total 4096 (got '$out')" "$([ "$out" = 4096 ]; echo $?)"

# nvidia-smi inside a slice lists the slice's processes and no one else's: a tenant of
# another slice holds memory meanwhile, and nvidia-smi outside sees both. Every process list
# of NVML is checked: compute, graphics and MPS, each in its _v3, _v2 and unversioned form,
# and the detail list of late R535 on in each mode; the simulated GPU lists every process in all
# of them (CARVE_SIM_PROC_LISTS=all). Only the compute _v3/_v2 lists were filtered until
# 2026-11-25 (the detail list), and the graphics, MPS and unversioned ones until later that day.
NVML_LISTS="v3 v2 v1 graphics-v3 graphics-v2 graphics-v1 mps-v3 mps-v2 mps-v1 detail detail-graphics detail-mps"
export CARVE_SIM_PROC_LISTS=all
MEMHOG=$BUILD/bench/memhog
# both hold 10 s: at 4 they had ended before the last list outside was read under four
# suites at once (2026-11-29)
in_slice 1GiB "$MEMHOG" --label outsider --max 256 --hold 10 >"$state_dir/outsider" 2>&1 &
outsider=$!
out=$(in_slice 2GiB sh -c '"$0" --label insider --max 256 --hold 10 >/dev/null 2>&1 & sleep 1.5
      echo "insider $!"; for api in $2; do echo "$api $("$1" $api | tr "\n" " ")"; done
      nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader' "$MEMHOG" \
      "$E2E/nvml_list" "$NVML_LISTS")
all=$(LD_LIBRARY_PATH="$SIM" "$SIM/bin/nvidia-smi" --query-compute-apps=pid --format=csv,noheader)
outside=$(for api in $NVML_LISTS; do echo "$api $(LD_LIBRARY_PATH="$SIM" "$E2E/nvml_list" "$api" | tr '\n' ' ')"; done)
wait "$outsider"
insider=$(echo "$out" | sed -n 's/^insider //p')
outsider_pid=$(sed -n 's/.*pid \([0-9]*\).*/\1/p' "$state_dir/outsider" | head -n1)
listed=$(echo "$out" | grep -v '^insider \|^[a-z0-9-]* [0-9 ]*$' | cut -d, -f1 | tr '\n' ' ')
[ -n "$insider" ] && echo "$listed" | grep -qw "$insider" && ! echo "$listed" | grep -qw "${outsider_pid:-none}"
rc=$?
check "nvidia-smi in a slice lists its tenant $insider and not $outsider_pid (listed: $listed)" $rc
for api in $NVML_LISTS; do
    listed=$(echo "$out" | sed -n "s/^$api //p")
    [ -n "$insider" ] && echo "$listed" | grep -qw "$insider" &&
        ! echo "$listed" | grep -qw "${outsider_pid:-none}"
    check "NVML's $api list in a slice names $insider and not $outsider_pid (listed: $listed)" $?
done
# outside any slice nothing is filtered: every list names both (so the checks above can fail)
for api in $NVML_LISTS; do
    listed=$(echo "$outside" | sed -n "s/^$api //p")
    echo "$listed" | grep -qw "${outsider_pid:-none}" && echo "$listed" | grep -qw "${insider:-none}"
    check "NVML's $api list outside names both tenants ($listed)" $?
done
unset CARVE_SIM_PROC_LISTS
echo "$all" | grep -qw "${outsider_pid:-none}" && echo "$all" | grep -qw "${insider:-none}"
rc=$?
check "nvidia-smi outside lists both tenants ($(echo "$all" | tr '\n' ' '))" $rc
# the insider (not a child of this script) is gone before the next checks use the GPU
for _ in $(seq 120); do [ -n "$insider" ] && kill -0 "$insider" 2>/dev/null || break; sleep 0.1; done

# per-device caps with a reordered CUDA_VISIBLE_DEVICES: CUDA ordinal 0 is physical GPU 1
out=$(CARVE_SIM_DEVICES=2 CUDA_VISIBLE_DEVICES=1,0 MEM_CAP=$GIB in_slice 0=2GiB,1=1GiB \
      "$E2E/mem_direct" 2>&1)
rc=$?
echo "$out" | grep -E '^(FAIL|# )' | sed 's/^/    /'
check "CUDA_VISIBLE_DEVICES=1,0 with 0=2GiB,1=1GiB: device 0 has physical GPU 1's 1 GiB cap" "$rc"
# with GPU 0 (current) uncapped, allocations from GPU 1's pools went through uncounted, and with
# 256 pools live (libcarve's table full) they counted on GPU 0, until 2026-11-27
for caps in 0=4GiB,1=1GiB 1=1GiB; do
    for fill in 0 256; do
        out=$(CARVE_SIM_DEVICES=2 CARVE_SIM_CTX_MEMORY=0 in_slice "$caps" "$E2E/mem_pooldev" "$fill" 2>&1)
        rc=$?
        echo "$out" | grep -v '^ok\|^carve: ' | sed 's/^/    /'
        check "mem_pooldev with caps $caps, $fill pools on GPU 0 first: a pool's allocations count on the pool's GPU, not the current one" "$rc"
    done
done
# A process the command leaves running starts CUDA after `carve run` has ended and removed
# the slice: it gets no GPU context rather than an uncapped GPU.
late=$state_dir/late
in_slice 1GiB sh -c "(sleep 1; \"\$0\" --max 2048 --hold 0 >$late.out 2>&1; echo \$? >$late.rc) &" \
    "$BUILD/bench/memhog"
for _ in $(seq 100); do [ -s "$late.rc" ] && break; sleep 0.1; done
check "a process left running after carve run ended gets no GPU context (exit $(cat "$late.rc" 2>/dev/null), $(grep -c 'no GPU context will be created' "$late.out" 2>/dev/null) refusal lines)" \
    "$([ "$(cat "$late.rc" 2>/dev/null)" = 1 ] && grep -q 'no GPU context will be created' "$late.out"; echo $?)"
# nor a context made with cuCtxCreate_v2, nor a green one (cuGreenCtxCreate was not wrapped,
# and made one, until 2026-11-27)
in_slice 1GiB sh -c "(sleep 1; \"\$0\" refused >$late.green 2>&1; echo \$? >$late.grc) &" \
    "$E2E/mem_overhead"
for _ in $(seq 100); do [ -s "$late.grc" ] && break; sleep 0.1; done
check "a process left running after carve run ended gets no context from cuCtxCreate_v2 or cuGreenCtxCreate (exit $(cat "$late.grc" 2>/dev/null): $(grep -v '^ok' "$late.green" 2>/dev/null | tr '\n' ' '))" \
    "$([ "$(cat "$late.grc" 2>/dev/null)" = 0 ]; echo $?)"

# the simulated driver waits 200 us in each cuMemFree, so that the racing frees' winner at the
# driver is as often as not a thread that found no record: it gave nothing back, and the one
# with the record put it back on its refused free (a count lost for good: once in 600 rounds
# without the wait, about 50 in 300 with it, until 2026-11-25); cuMemMap waits 300 us, so that
# a handle's release on another thread lands inside its refused map (the handle was counted
# for good: 3.75 GiB of the 4 GiB cap in 20 rounds, every run, until the refused map settled it)
out=$(CARVE_SIM_FREE_DELAY_US=200 CARVE_SIM_MAP_DELAY_US=300 CARVE_SIM_CTX_MEMORY=0 in_slice 4GiB "$E2E/mem_edge" 2>"$state_dir/edge.err")
rc=$?
echo "$out" | grep -v '^ok' | sed 's/^/    /'
check "mem_edge: bad and racing frees, overflowing sizes, a refused map and a release racing one leave usage exact" "$rc"
# an overflowing size is named so, not as the stand-in's "16384.00 PiB"
grep -q 'requested a size past 64 bits$' "$state_dir/edge.err" && ! grep -q 'PiB$' "$state_dir/edge.err"
check "mem_edge: the OOM line of an overflowing size says it passed 64 bits ($(grep -c 'past 64 bits' "$state_dir/edge.err") lines)" $?

# held_while TENANT_LOG QUERY CMD...: runs CMD (a memhog that holds) in the background, and
# once it says it holds, what the simulated nvidia-smi outside the slice answers to QUERY
# (--query-compute-apps=used_memory: the tenant's own usage as NVML counts it;
# --query-gpu=memory.used: the whole GPU's, managed memory included), in MiB
held_while() {
    local log=$1 query=$2 pid answer=
    shift 2
    "$@" >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        grep -q holding "$log" && break
        sleep 0.1
    done
    grep -q holding "$log" &&
        answer=$(LD_LIBRARY_PATH="$SIM" "$SIM/bin/nvidia-smi" "$query" --format=csv,noheader,nounits)
    wait "$pid"
    echo "$answer" | head -n 1
}

# the driver takes whole 2 MiB pages past 1 MiB, and packs smaller allocations into such
# pages, whole ones only (driver 580, H200): counted at the size asked, a tenant allocating
# 1 MiB and 1 byte at a time held 2046 MiB of a 1 GiB slice, and one allocating 512 KiB and 1
# byte (3 to a page), counted in 512-byte steps alone, 1364 MiB (until 2026-11-28)
for size in 1048577 524289; do
    held=$(CARVE_SIM_CTX_MEMORY=0 held_while "$state_dir/pages.log" --query-compute-apps=used_memory \
        "$CARVE" run --simulate --memory 1GiB -- "$MEMHOG" --step-bytes $size --max 4096 --hold 2)
    [ -n "$held" ] && [ "$held" -le 1024 ] && [ "$held" -ge 1000 ] &&
        grep -q 'allocation [0-9]*: CUDA_ERROR_OUT_OF_MEMORY' "$state_dir/pages.log"
    check "$size B at a time in a 1 GiB slice: the tenant holds ${held:-?} MiB by NVML, 1000-1024" $?
done
# a page stays the driver's while any allocation in it lives: a tenant that filled its 1 GiB
# with allocations of 256 KiB + 1 B (7 to a page), freed all but one of each page and
# allocated again in 2 MiB steps held 1902 MiB (until 2026-11-28: small frees now wait for a
# reading of NVML's usage, which charges the pages still held)
held=$(CARVE_SIM_CTX_MEMORY=0 held_while "$state_dir/frag.log" --query-compute-apps=used_memory \
    "$CARVE" run --simulate --memory 1GiB -- "$MEMHOG" --step-bytes 262145 --max 4096 \
    --keep-every 7 --then-step 2 --hold 2)
[ -n "$held" ] && [ "$held" -le 1024 ] && grep -q 'kept 512 of' "$state_dir/frag.log"
check "all but one small allocation of each page freed, then 2 MiB steps: the tenant holds ${held:-?} MiB by NVML, at most 1024" $?
# ... and one that frees all but one gets its memory back at once
CARVE_SIM_CTX_MEMORY=0 "$CARVE" run --simulate --memory 1GiB -- "$MEMHOG" --step-bytes 262145 \
    --max 4096 --keep-every 4096 --then-step 2 --hold 0 >"$state_dir/frag2.log" 2>&1
more=$(sed -n 's/.*got \([0-9]*\) MiB more.*/\1/p' "$state_dir/frag2.log")
[ -n "$more" ] && [ "$more" -ge 1000 ]
check "all but one small allocation freed, then 2 MiB steps: ${more:-?} MiB more, at least 1000" $?
# ... also from the GPU's memory pool, whose admission reads NVML again too
CARVE_SIM_CTX_MEMORY=0 "$CARVE" run --simulate --memory 1GiB -- "$MEMHOG" --step-bytes 262145 \
    --max 4096 --keep-every 4096 --then-step 2 --then-pool --hold 0 >"$state_dir/frag3.log" 2>&1
more=$(sed -n 's/.*got \([0-9]*\) MiB more.*/\1/p' "$state_dir/frag3.log")
[ -n "$more" ] && [ "$more" -ge 900 ] # the pool reserves in 32 MiB steps
check "the same, then 2 MiB steps of cuMemAllocAsync: ${more:-?} MiB more, at least 900" $?
# NVML leaves a process's managed memory out of its usage (driver 580, H200): the context's
# memory, NVML's usage less the count, read as none beside 1 GiB of managed memory, and a
# 2 GiB slice's tenant held 2548 MiB (until 2026-11-28)
held=$(CARVE_SIM_CTX_MEMORY=500MiB held_while "$state_dir/managed.log" --query-gpu=memory.used \
    "$CARVE" run --simulate --memory 2GiB -- "$MEMHOG" --managed 1024 --step 64 --max 4096 --hold 2)
[ -n "$held" ] && [ "$held" -le 2048 ] && grep -q 'managed: 1024 MiB' "$state_dir/managed.log"
check "1 GiB managed, then 64 MiB at a time in a 2 GiB slice: the GPU holds ${held:-?} MiB, at most 2048" $?

# context and module memory given back at every unload and destroy grew the slice's usage by
# as much each time (500 -> 502 -> 504 MiB per module load and unload, +500 MiB per context),
# until 2026-11-27
out=$(CARVE_SIM_CTX_MEMORY=500MiB CARVE_SIM_MODULE_MEMORY=2MiB CARVE_SIM_LAZY_MEMORY=256MiB \
      MEM_LAZY_MIB=256 in_slice 4GiB "$E2E/mem_overhead" 2>&1)
rc=$?
echo "$out" | grep -v '^ok' | sed 's/^/    /'
check "mem_overhead: module loads and unloads, contexts (green ones too) created and destroyed, the primary released and retained, limits set, leave usage where it was; a kernel loaded lazily is in the next cuMemGetInfo" "$rc"

# an address unmapped on one thread and mapped again on another before the unmap returned:
# the unmap took the new mapping's note, and the new handle's release was given back while
# it was mapped (until 2026-11-27)
out=$(CARVE_SIM_MAP_DELAY_US=2000 CARVE_SIM_UNMAP_DELAY_US=4000 CARVE_SIM_CTX_MEMORY=0 \
      in_slice 1GiB "$E2E/mem_remap" 2>&1)
rc=$?
echo "$out" | grep -v '^ok' | sed 's/^/    /'
check "mem_remap: a re-map racing an unmap keeps the new handle counted until its own unmap" "$rc"

# a retain racing with a release of its handle, or with its last unmap: the handle was given
# back while the retain held it (until 2026-11-27)
out=$(CARVE_SIM_RETAIN_DELAY_US=3000 CARVE_SIM_CTX_MEMORY=0 in_slice 1GiB "$E2E/mem_retain" 2>&1)
rc=$?
echo "$out" | grep -v '^ok' | sed 's/^/    /'
check "mem_retain: a retain racing with a release or the last unmap keeps its handle counted until its own release" "$rc"
out=$(CARVE_SIM_CTX_MEMORY=0 in_slice 1GiB "$E2E/mem_retain" full 2>&1)
rc=$?
echo "$out" | grep -v '^ok' | sed 's/^/    /'
check "mem_retain full: the retain past the 65,534 libcarve counts is refused, and the handle stays counted while the driver holds it" "$rc"

# a reconciliation of the context's memory while another thread's allocation was under way
# (counted, not yet the driver's) read NVML's usage low and took the context's 500 MiB off
# the slice, and 500 MiB more was admitted (until 2026-11-28); each simulated cuMemAlloc_v2
# waits 3 ms so that the other thread's cuMemGetInfo lands inside one most rounds
out=$(CARVE_SIM_ALLOC_DELAY_US=3000 CARVE_SIM_CTX_MEMORY=500MiB in_slice 4GiB "$E2E/mem_inflight" 3 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
check "mem_inflight: context memory stays counted while another thread's allocation is under way" "$rc"
out=$(CARVE_SIM_ALLOC_DELAY_US=1000 CARVE_SIM_CTX_MEMORY=500MiB CARVE_SIM_MODULE_MEMORY=512MiB in_slice 4GiB "$E2E/mem_inflight" unload 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
check "mem_inflight unload: a module's memory comes back at its unload while another thread allocates and frees" "$rc"
# a pool's memory the driver gave back at a sync between libcarve's look at the pools and its
# reading of NVML was taken off the context's memory (until 2026-11-28)
out=$(CARVE_SIM_CTX_MEMORY=500MiB in_slice 4GiB "$E2E/mem_inflight" pools 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
check "mem_inflight pools: a pool given back at a sync leaves the context's memory counted" "$rc"
out=$(CARVE_SIM_UNMAP_DELAY_US=4000 CARVE_SIM_CTX_MEMORY=500MiB in_slice 4GiB "$E2E/mem_inflight" unmap 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
check "mem_inflight unmap: a handle freed at its last unmap leaves the context's memory counted" "$rc"

# cuMemAlloc_v2 as the first call libcarve wraps read the real entry point before init had
# resolved it: CUDA_ERROR_NOT_INITIALIZED, context or not (until 2026-11-27)
for arg in ctx noctx; do
    out=$(CARVE_SIM_CTX_MEMORY=0 MEM_CAP=$GIB in_slice 1GiB "$E2E/mem_first" "$arg" 2>&1)
    rc=$?
    echo "$out" | grep -v '^ok\|^carve: ' | sed 's/^/    /'
    check "mem_first $arg: cuMemAlloc_v2 as the first wrapped call gets the driver's answer, counted" "$rc"
done

out=$(CARVE_SIM_CTX_MEMORY=0 in_slice 1GiB "$E2E/mem_graph" 2>&1)
rc=$?
echo "$out" | grep -v '^ok' | sed 's/^/    /'
check "mem_graph: CUDA graphs' allocation nodes count from their upload or launch, and never pass the cap" "$rc"
out=$(CARVE_SIM_DEVICES=2 in_slice 0=2GiB,1=1GiB nvidia-smi --query-gpu=memory.total \
      --format=csv,noheader,nounits 2>&1 | tr '\n' ' ')
check "nvidia-smi with 0=2GiB,1=1GiB reports '2048 1024 ' (got '$out')" "$([ "$out" = '2048 1024 ' ]; echo $?)"

# a GPU whose compute mode lets no second process in: the tenant refused a context is told
# why and what to do, once, even when quiet; the holder is unaffected (a private simulated
# GPU, whose contexts follow CARVE_SIM_COMPUTE_MODE as a GPU's do)
excl_state=$state_dir/excl-state
# the holder holds until the second has tried (then SIGTERM, which carve run passes on)
CARVE_SIM_STATE=$excl_state CARVE_SIM_COMPUTE_MODE=3 "$CARVE" run --simulate --memory 1GiB -- \
    "$MEMHOG" --label holder --max 256 --hold 60 >"$state_dir/holder" 2>&1 &
holder=$!
for _ in $(seq 300); do grep -q 'holding' "$state_dir/holder" && break; sleep 0.1; done
CARVE_SIM_STATE=$excl_state CARVE_SIM_COMPUTE_MODE=3 CARVE_QUIET=1 in_slice 1GiB "$MEMHOG" \
    --label second --max 256 --hold 0 >"$state_dir/second" 2>&1
rc=$?
held=$(grep -c 'holding' "$state_dir/holder")
kill "$holder" 2>/dev/null
wait "$holder"
n=$(grep -c 'Exclusive_Process compute mode and another process holds it.*--mode mps' "$state_dir/second")
check "Exclusive_Process, held by another tenant: the second gets no context and one line that says why (exit $rc, $n lines; the holder held: $held)" \
    "$([ "$rc" -ne 0 ] && [ "$n" -eq 1 ] && [ "$held" -eq 1 ]; echo $?)"
CARVE_SIM_STATE=$excl_state CARVE_SIM_COMPUTE_MODE=3 in_slice 1GiB "$MEMHOG" --max 256 --hold 0 \
    >"$state_dir/third" 2>&1
rc=$?
check "Exclusive_Process, once the holder is gone: a tenant gets its context (exit $rc)" \
    "$([ "$rc" -eq 0 ] && ! grep -q 'compute mode' "$state_dir/third"; echo $?)"
CARVE_SIM_STATE=$excl_state CARVE_SIM_COMPUTE_MODE=2 in_slice 1GiB "$MEMHOG" --max 256 --hold 0 \
    >"$state_dir/prohibited" 2>&1
rc=$?
check "Prohibited: no context, and the line says so (exit $rc: $(grep -m1 -o 'the Prohibited compute mode[^(]*' "$state_dir/prohibited"))" \
    "$([ "$rc" -ne 0 ] && grep -q 'Prohibited compute mode, where no process may use it' "$state_dir/prohibited"; echo $?)"

shm_after=$(shm_list)
check "no slice shm object left in /dev/shm" "$([ "$shm_before" = "$shm_after" ]; echo $?)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

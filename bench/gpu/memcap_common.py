"""memcap_common.py - the shared shape of the framework memcap checks (torch, cupy, jax).

Each check runs inside `carve run --memory 4GiB`: it prints what the framework sees, fits
3 GiB, then asks for 2 GiB more, which must raise the framework's own out-of-memory error.
It ends with one JSON line that bench/gpu/run-memcap.sh reads:
  {"framework", "sees_total", "fit_3g", "oom_on_2g_more", "error_type"}
"""
import json
import sys
import traceback

GIB = 1 << 30


def run(framework, sees_total, alloc, is_oom):
    """sees_total(): bytes the framework reports; alloc(nbytes): allocate and touch, return
    the object; is_oom(exc): is exc the framework's own out-of-memory error?"""
    result = {"framework": framework, "sees_total": None, "fit_3g": False,
              "oom_on_2g_more": False, "error_type": None}
    held = []
    try:
        result["sees_total"] = int(sees_total())
        print(f"{framework}: sees {result['sees_total'] / 2**20:.0f} MiB", flush=True)
        held.append(alloc(3 * GIB))
        result["fit_3g"] = True
        print(f"{framework}: 3 GiB fits", flush=True)
        held.append(alloc(2 * GIB))
        print(f"{framework}: 2 GiB more ALSO fit: the cap did not hold", flush=True)
    except Exception as exc:  # noqa: BLE001 - we report whatever was raised
        result["error_type"] = type(exc).__name__
        result["oom_on_2g_more"] = result["fit_3g"] and bool(is_oom(exc))
        first_line = (str(exc).strip().splitlines() or [""])[0]
        print(f"{framework}: raised {type(exc).__name__}: {first_line[:300]}", flush=True)
        if not result["oom_on_2g_more"]:
            traceback.print_exc()
    held.clear()
    print(json.dumps(result), flush=True)
    return 0 if result["fit_3g"] and result["oom_on_2g_more"] else 1


def main(framework, sees_total, alloc, is_oom):
    sys.exit(run(framework, sees_total, alloc, is_oom))

#!/usr/bin/env python3
"""nvml-bindings-facts.py - NVML's ABI facts as NVIDIA's nvml.h gives them, read from the
bindgen output that Debian's librust-nvml-wrapper-sys-dev ships (generated from an NVML
header; 0.7.0: NVML 11.8), for machines that have no nvml.h.

    nvml-bindings-facts.py BINDINGS_RS NAMES   -> "name value" lines on stdout

NAMES is a file of the facts to give, one "kind.name" a line (the first word of carve's
abi-check lines: sizeof.nvmlMemory_t, offsetof.nvmlMemory_t.free, value.NVML_SUCCESS).
Each is computed from the bindings' #[repr(C)] structs with ctypes, which lays them out as
the C compiler does, and from their constants; a fact whose type, member or constant the
bindings lack is written as "absent.NAME" (an older NVML than carve's declarations, or a
function-like macro such as nvmlMemory_v2, which bindgen does not translate). Exit status
2 when the bindings cannot be read.
"""
import ctypes
import re
import sys

SCALARS = {
    "c_char": ctypes.c_char, "c_schar": ctypes.c_byte, "c_uchar": ctypes.c_ubyte,
    "c_short": ctypes.c_short, "c_ushort": ctypes.c_ushort, "c_int": ctypes.c_int,
    "c_uint": ctypes.c_uint, "c_long": ctypes.c_long, "c_ulong": ctypes.c_ulong,
    "c_longlong": ctypes.c_longlong, "c_ulonglong": ctypes.c_ulonglong,
    "c_float": ctypes.c_float, "c_double": ctypes.c_double,
    "i8": ctypes.c_int8, "u8": ctypes.c_uint8, "i16": ctypes.c_int16, "u16": ctypes.c_uint16,
    "i32": ctypes.c_int32, "u32": ctypes.c_uint32, "i64": ctypes.c_int64, "u64": ctypes.c_uint64,
}

ITEM = re.compile(
    r"pub (?P<kind>struct|union) (?P<name>\w+) \{(?P<body>[^}]*)\}"
    r"|pub type (?P<alias>\w+) = (?P<target>[^;]+);"
    r"|pub const (?P<const>\w+): (?P<ctype>[^=]+)= (?P<value>[^;]+);"
    r"|pub use self::(?P<used>\w+) as (?P<as>\w+);",
    re.S)
FIELD = re.compile(r"pub (\w+): ([^,]+(?:\[[^\]]*\])?),")


class Bindings:
    def __init__(self, text):
        self.records = {}   # struct or union name -> (kind, [(member, type text)])
        self.aliases = {}   # type name -> type text
        self.consts = {}    # constant name -> (type text, value text)
        for m in ITEM.finditer(text):
            if m["kind"]:
                fields = [(f[0], f[1].strip()) for f in FIELD.findall(m["body"] + ",")]
                self.records[m["name"]] = (m["kind"], fields)
            elif m["alias"]:
                self.aliases[m["alias"]] = m["target"].strip()
            elif m["used"]:
                self.aliases[m["as"]] = m["used"]
            else:
                self.consts[m["const"]] = (m["ctype"].strip(), m["value"].strip())
        self.cache = {}

    def ctype(self, text):
        """The ctypes type of a Rust type as bindgen writes it; KeyError when unknown."""
        text = text.strip()
        if text in self.cache:
            return self.cache[text]
        array = re.fullmatch(r"\[(.+); (\d+)usize\]", text)
        if array:
            t = self.ctype(array[1]) * int(array[2])
        elif text.startswith(("*mut ", "*const ", "::std::option::Option<")):
            t = ctypes.c_void_p
        elif text.split("::")[-1] in SCALARS:
            t = SCALARS[text.split("::")[-1]]
        elif text in self.records:
            kind, fields = self.records[text]
            base = ctypes.Structure if kind == "struct" else ctypes.Union
            t = type(text, (base,), {})
            self.cache[text] = t  # a member may point back to it
            t._fields_ = [(name, self.ctype(ftype)) for name, ftype in fields]
        elif text in self.aliases:
            t = self.ctype(self.aliases[text])
        else:
            raise KeyError(text)
        self.cache[text] = t
        return t

    def value(self, name):
        """A constant's value: a #define, or an enumerator (bindgen names it TYPE_NAME)."""
        if name in self.consts:
            return int(self.consts[name][1])
        for cname, (ctype, value) in self.consts.items():
            if cname.endswith("_" + name) and cname[: -len(name) - 1] == ctype:
                return int(value)
        raise KeyError(name)


def fact(b, key):
    kind, _, rest = key.partition(".")
    if kind == "value":
        return b.value(rest)
    if kind in ("sizeof", "alignof"):
        t = b.ctype(rest)
        return ctypes.sizeof(t) if kind == "sizeof" else ctypes.alignment(t)
    if kind == "offsetof":
        typename, _, member = rest.partition(".")
        t = b.ctype(typename)
        if "." in member:
            raise KeyError(member)  # carve's NVML facts name no nested members
        return getattr(t, member).offset
    raise KeyError(kind)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            b = Bindings(f.read())
        with open(argv[2], encoding="utf-8") as f:
            names = f.read().split()
    except OSError as e:
        sys.stderr.write(f"nvml-bindings-facts: {e}\n")
        return 2
    if not b.records or not b.consts:
        sys.stderr.write(f"nvml-bindings-facts: {argv[1]}: no bindgen structs or constants\n")
        return 2
    for key in names:
        try:
            print(f"{key} {fact(b, key)}")
        except (KeyError, AttributeError, ValueError):
            print(f"absent.{key}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

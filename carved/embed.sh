#!/bin/sh
# embed.sh - turns a file (the dashboard page) into a C source file that defines
# `const char NAME[]' (the bytes, then a NUL) and `const size_t NAME_len' (without the NUL),
# so that carved carries the page in its binary. Plain sh, od and awk: no xxd.
#
#   sh carved/embed.sh carved/dashboard.html build/obj/carved/dashboard_html.c [NAME]
set -eu

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: embed.sh INPUT OUTPUT.c [NAME]" >&2
    exit 2
fi
in=$1
out=$2
name=${3:-carved_dashboard_html}
if [ ! -r "$in" ]; then
    echo "embed.sh: cannot read \`$in'" >&2
    exit 1
fi
tmp=$out.tmp.$$
trap 'rm -f "$tmp"' EXIT

{
    printf '/* Generated from %s by carved/embed.sh: do not edit. */\n' "$in"
    printf '#include <stddef.h>\n\n'
    printf 'extern const char %s[];\nextern const size_t %s_len;\n\n' "$name" "$name"
    printf 'const char %s[] = {\n' "$name"
    # signed decimal bytes (a `char' may be signed: 226 would not fit), 16 to a line
    od -An -v -td1 "$in" | awk -v name="$name" '
        { for (i = 1; i <= NF; i++) { printf "%s%s,", (n % 16 ? " " : "    "), $i;
                                      if (++n % 16 == 0) printf "\n" } }
        END { if (n % 16) printf "\n";
              printf "    0\n};\nconst size_t %s_len = %d;\n", name, n }'
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT

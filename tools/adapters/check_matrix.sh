#!/bin/bash
# The conformance matrix of this CI run (docs/findings.md "What lockstep finds in other implementations"): every adapter's
# replay and live-run reports (left by check_adapter.sh) -> conformance-matrix.md and .html. Fails when a report
# is missing or does not read, when a failure no expectation explains is in one (--strict), or when the HTML page
# is not well-formed (each plot parses as SVG) or loads anything from outside.
#   check_matrix.sh LOCKSTEP OUTDIR REPORT_ROOT...
set -u
lockstep="$1"; out="$2"; shift 2
reports=()
for root in "$@"; do
  while IFS= read -r f; do reports+=("$f"); done < <(find "$root" -name 'replay-report.json' -o -name 'lockstep-report.json' | LC_ALL=C sort)
done
if [ "${#reports[@]}" = 0 ]; then echo "check_matrix: no reports under $*"; exit 1; fi
rm -rf "$out"
"$lockstep" matrix --strict --out-dir "$out" "${reports[@]}" || { echo "check_matrix: FAILED: lockstep matrix"; exit 1; }
python3 - "$out/conformance-matrix.html" "$out/conformance-matrix.md" "${#reports[@]}" <<'PY'
import re, sys, xml.etree.ElementTree as ET
from html.parser import HTMLParser
html, md, n = open(sys.argv[1], encoding="utf-8").read(), open(sys.argv[2], encoding="utf-8").read(), int(sys.argv[3])
class Check(HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []
    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("src", "href") and v and not v.startswith("#"):
                sys.exit("the page loads %s from outside" % v)
        if tag not in ("meta", "br"): self.stack.append(tag)  # void elements; <x/> comes as startendtag
    def handle_startendtag(self, tag, attrs): pass
    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag: sys.exit("unbalanced </%s> (open: %s)" % (tag, self.stack[-3:]))
        self.stack.pop()
c = Check(); c.feed(html)
if c.stack: sys.exit("unclosed tags: %s" % c.stack)
svgs = re.findall(r"<svg.*?</svg>", html, re.S)
for s in svgs: ET.fromstring(s)
rows = [l for l in md.splitlines() if l.startswith("## ")]
print("check_matrix: ok: %d reports, %d implementations, %d plots" % (n, len(rows), len(svgs)))
PY

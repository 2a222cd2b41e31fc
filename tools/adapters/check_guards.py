"""Every expectations entry that accepts numbers names the framework mutants that guard it, and they exist.

An entry with "accept" (conformance/compare/expectations.h) masks numbers by a predicate; a guard is a mutant of the
framework (ADAPTER/mutants/NAME.js or .py) that breaks the masked quantity in another way, which
check_adapter_mutants.sh requires to fail with the same file. A shipped entry without a guard could hide a real bug
unnoticed, so this check (ctest expectations_guarded) fails on it, naming the file and the entry.
    check_guards.py ROOT
"""
import json
import os
import sys

# Shipped expectations file -> the adapter folder whose mutants/ guard it.
GUARDED = {
    "fixtures/expectations/tfjs.json": "tools/adapters/tfjs",
    "fixtures/expectations/js-pytorch.json": "tools/adapters/jspytorch",
    "fixtures/expectations/pytorch-python-foreach.json": "tools/adapters/pytorch",
    "fixtures/expectations/pytorch-python-fused.json": "tools/adapters/pytorch",
    "fixtures/expectations/pytorch-python.json": "tools/adapters/pytorch",
}


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    problems, checked = [], 0
    shipped = sorted(f for f in os.listdir(os.path.join(root, "fixtures/expectations"))
                     if f.endswith(".json") and not f.endswith("-tolerance.json"))
    for name in shipped:
        rel = "fixtures/expectations/" + name
        if rel not in GUARDED:
            problems.append(f"{rel}: no adapter is known to guard it (add it to tools/adapters/check_guards.py)")
            continue
        doc = json.load(open(os.path.join(root, rel)))
        entries = doc.get("expectations", []) if isinstance(doc, dict) else doc
        mutants = os.path.join(root, GUARDED[rel], "mutants")
        for i, e in enumerate(entries):
            if "accept" not in e:
                continue
            checked += 1
            guards = e.get("guard", [])
            guards = [guards] if isinstance(guards, str) else guards
            where = f"{rel}: /expectations/{i} ({e.get('id') or e.get('features')}, fields {e.get('fields')})"
            if not guards:
                problems.append(f"{where}: accepts numbers but names no \"guard\" mutant")
            for g in guards:
                if not any(os.path.exists(os.path.join(mutants, g + ext)) for ext in (".js", ".py")):
                    problems.append(f"{where}: guard '{g}' is not in {GUARDED[rel]}/mutants")
    for p in problems:
        print("check_guards: " + p)
    print(f"check_guards: {checked} entries that accept numbers, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

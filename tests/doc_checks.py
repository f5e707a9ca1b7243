#!/usr/bin/env python3
"""Checks the repository's Markdown against the tree and the engine.

records: every file a document names in backticks (`tools/rill/bench-lm-lavapipe/x.json`,
`x-{a,b}-run{1,2}.json`, `session-end-*`) exists, so no figure quotes a record that was never
kept or has gone; bare names are looked up beside the document, then in the record folders.
links: every relative Markdown link resolves.
plan-keys: engine/KERNELS.md's table of plan keys is exactly what `rill info --plan-keys --json`
lists (the engine's one table of them).

  tests/doc_checks.py REPO [RILL_BINARY]
"""
import fnmatch
import glob
import json
import os
import re
import subprocess
import sys

# Names the documents give to files rill or a user writes, not to kept records.
OUTPUT_NAMES = {
    "trace.json", "trace.json.summary.txt", "t.json", "r.svg", "rill-tuning.json", "config.json",
    "model.safetensors", "model*.safetensors", "icl-curves.csv", "icl-curves.svg", "table1.csv",
    "gpu-check.tgz", "tokenizer.model", "pytorch_model.bin", "la-progress.txt",
}
RECORD_EXT = r"(?:json|txt|md|csv|svg|safetensors|cmake|sh|py)"
TOKEN = re.compile(r"`([A-Za-z0-9_.{},*/+-]+\." + RECORD_EXT + r")`")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def expand_braces(text):
    m = re.search(r"\{([^{}]*)\}", text)
    if not m:
        return [text]
    out = []
    span = re.fullmatch(r"(\d+)\.\.(\d+)", m.group(1))
    alts = [str(i) for i in range(int(span.group(1)), int(span.group(2)) + 1)] if span else m.group(1).split(",")
    for alt in alts:
        out += expand_braces(text[: m.start()] + alt + text[m.end():])
    return out


def documents(repo):
    docs = [os.path.join(repo, "README.md"), os.path.join(repo, "CHANGELOG.md")]
    for pattern in ("engine/*.md", "tools/**/*.md", "tests/**/*.md"):
        docs += glob.glob(os.path.join(repo, pattern), recursive=True)
    return sorted(d for d in docs if os.path.isfile(d))


def record_dirs(repo):
    dirs = [repo, os.path.join(repo, "tests", "data")]
    for root, _, _ in os.walk(os.path.join(repo, "tools")):
        dirs.append(root)
    return dirs


def exists(name, doc_dir, repo, dirs):
    def any_match(pattern):
        return bool(glob.glob(pattern)) if any(c in pattern for c in "*?[") else os.path.exists(pattern)

    if "/" in name:
        return any_match(os.path.join(repo, name)) or any_match(os.path.join(doc_dir, name))
    if any_match(os.path.join(doc_dir, name)):
        return True
    return any(any_match(os.path.join(d, name)) for d in dirs)


def outside(name, repo):
    root = os.path.realpath(repo)
    return not os.path.realpath(os.path.join(root, name)).startswith(root + os.sep)


def check_records(repo):
    problems, checked = [], 0
    dirs = record_dirs(repo)
    for doc in documents(repo):
        doc_dir = os.path.dirname(doc)
        text = open(doc, encoding="utf-8").read()
        for line_no, line in enumerate(text.split("\n"), 1):
            for token in TOKEN.findall(line):
                for name in expand_braces(token):
                    base = os.path.basename(name)
                    if base in OUTPUT_NAMES or any(fnmatch.fnmatch(base, n) for n in OUTPUT_NAMES if "*" in n):
                        continue
                    if name.startswith(("OUT/", "build/", "$", "~")) or "<" in name:
                        continue
                    if outside(name, repo):  # beside the repository (../shared/...): not its to keep
                        continue
                    checked += 1
                    if not exists(name, doc_dir, repo, dirs):
                        problems.append(f"{os.path.relpath(doc, repo)}:{line_no}: names `{name}`, which is not in the tree")
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue
                checked += 1
                if not os.path.exists(os.path.join(doc_dir, target)):
                    problems.append(f"{os.path.relpath(doc, repo)}:{line_no}: links to {target}, which is not in the tree")
    return problems, checked


def check_plan_keys(repo, rill):
    listed = json.loads(subprocess.run([rill, "info", "--plan-keys", "--json"], check=True,
                                       capture_output=True, text=True).stdout)
    text = open(os.path.join(repo, "engine", "KERNELS.md"), encoding="utf-8").read()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([a-z0-9_]+)` \|.*\|$", text, re.M)}
    problems = []
    for k in listed:
        want = f"| `{k['key']}` | {k['values']} | {k['chooses']} | {'yes' if k['tunable'] else 'no'} |"
        if rows.get(k["key"]) != want:
            problems.append(f"engine/KERNELS.md: the row of plan key {k['key']} should read\n  {want}")
    for key in sorted(set(rows) - {k["key"] for k in listed}):
        problems.append(f"engine/KERNELS.md: lists plan key {key}, which the engine does not have")
    return problems, len(listed)


def main():
    repo = sys.argv[1]
    problems, checked = check_records(repo)
    summary = f"{checked} named files and links"
    if len(sys.argv) > 2:
        key_problems, keys = check_plan_keys(repo, sys.argv[2])
        problems += key_problems
        summary += f", {keys} plan keys"
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"documents: all {summary} check out")
    return 0


if __name__ == "__main__":
    sys.exit(main())

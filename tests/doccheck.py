"""What the manual (README.md and docs/*.md) says, read the way the tests compare it with
the code: the property tables, the `-device femu,...` and `--dev "..."` lines, the option
tables of femu-sim and the run scripts, and the links between the files. And what the code
defines: the properties of hw/femu (each kind's P(S, TYPE, "name", ...) lists and the
controller's DEFINE_PROP lines), femu-sim's options and job-file options, the launcher's
options. tests/unit/test_docs.py and tests/qtest/test_docs_properties.py use it."""

import re
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

CODE_SPAN = re.compile(r"`([^`]+)`")
LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(([^)\s]+)\)")
NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


def manual_files():
    """README.md and every docs/*.md, in a stable order."""
    return [ROOT / "README.md"] + sorted(DOCS.glob("*.md"))


def strip_fences(text):
    """The text without its fenced code blocks (tables and links live outside them)."""
    return re.sub(r"^```.*?^```[^\n]*$", "", text, flags=re.M | re.S)


def tables(text):
    """Every markdown table: (header cells, [row cells]) with the cells stripped."""
    found, lines = [], strip_fences(text).splitlines()
    i = 0
    while i + 1 < len(lines):
        if lines[i].startswith("|") and re.match(r"^\|(\s*:?-+:?\s*\|)+\s*$", lines[i + 1]):
            head = split_row(lines[i])
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(split_row(lines[i]))
                i += 1
            found.append((head, rows))
        else:
            i += 1
    return found


def split_row(line):
    """A table row's cells; a `|` inside a code span is not a separator."""
    cells, cur, in_code = [], "", False
    for ch in line.strip().strip("|"):
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append(cur.strip())
            cur = ""
        else:
            cur += ch
    cells.append(cur.strip())
    return cells


def option_table(marker):
    """(file, {option: meaning}) of the manual's table whose first header cell is "option"
    and one of whose rows is for `marker` (e.g. --cmd: the run scripts' table)."""
    for f in manual_files():
        for head, rows in tables(f.read_text()):
            if head[0].lower() != "option":
                continue
            opts = {}
            for row in rows:
                for span in CODE_SPAN.findall(row[0]):
                    opts[span.split()[0].split("=")[0]] = row[-1]
            if marker in opts:
                return f, opts
    return None, {}


def first_column_names(head_word, files=None):
    """{name: [file, ...]} of the code spans in the first column of every table whose first
    header cell is head_word ("property", "option")."""
    names = {}
    for f in files or manual_files():
        for head, rows in tables(f.read_text()):
            if head[0].lower() != head_word:
                continue
            for row in rows:
                for span in CODE_SPAN.findall(row[0]):
                    word = span.split()[0].split("=")[0]
                    names.setdefault(word, []).append(f.name)
    return names


# ---- -device femu properties ---------------------------------------------------------

def code_properties():
    """The -device femu properties hw/femu defines: every entry of the QEMU-free property
    lists (P(S, TYPE, "name", field, default), expanded by qdev-params.h for QEMU and by
    femu-sim for itself) and the controller's own DEFINE_PROP lines."""
    names = set()
    for f in (ROOT / "hw" / "femu").rglob("*.[ch]"):
        text = f.read_text()
        names.update(re.findall(r"\bP\(S,\s*[A-Z0-9]+,\s*\"([^\"]+)\"", text))
        names.update(re.findall(r"\bDEFINE_PROP(?:_[A-Z0-9]+)?\(\s*\"([^\"]+)\"", text))
    return names


def property_rows():
    """{name: {header: cell}} of every row of the manual's property tables."""
    rows_by_name = {}
    for f in manual_files():
        for head, rows in tables(f.read_text()):
            if head[0].lower() != "property":
                continue
            for row in rows:
                for span in CODE_SPAN.findall(row[0]):
                    rows_by_name[span.split()[0].split("=")[0]] = dict(
                        zip([h.lower() for h in head], row))
    return rows_by_name


def documented_properties():
    """{name: [file, ...]} of the properties the manual's property tables name."""
    return first_column_names("property")


def device_lines():
    """(file, key) of every k=v the manual gives on a `-device femu,...` line or in a
    `--dev "..."` (run scripts, femu-sim): the properties it presents as real."""
    found = []
    for f in manual_files():
        text = f.read_text()
        for m in re.finditer(r"-device femu,([^\s`\"'\\]+)", text):
            found += [(f.name, k) for k in keys(m.group(1))]
        for m in re.finditer(r"--dev[ =](?:\"([^\"]+)\"|([^\s`\"']+))", text):
            found += [(f.name, k) for k in keys(m.group(1) or m.group(2))]
    return found


def device_examples():
    """The manual's complete `-device femu,...` lines (no `...`, no memdev, which needs an
    -object beside it): each should start as written."""
    found = set()
    for f in manual_files():
        for m in re.finditer(r"-device femu,([^\s`\"'\\]+)", f.read_text()):
            props = m.group(1)
            if "=" in props and "..." not in props and "memdev=" not in props:
                found.add(props)
    return sorted(found)


# k=v spans of the manual that are not -device femu properties: another program's options
# (memory backends, QEMU's own nvme, fio and db_bench, the sanitizers) and placeholders.
OTHER_KEYS = {"share", "readonly", "rom", "reserve", "id", "zoned", "sync", "flow",
              "halt_on_error", "fast_unwind_on_malloc", "detect_leaks", "k"}


def inline_settings():
    """(file, key) of every code span that is one `name=value`: the manual's way of showing
    a setting in running text (`sra=on`), a -device femu property unless it is a femu-sim
    job-file option or in OTHER_KEYS."""
    found = []
    skip = OTHER_KEYS | sim_job_options()
    for f in manual_files():
        for span in CODE_SPAN.findall(strip_fences(f.read_text())):
            m = re.match(r"^([a-z][a-z0-9_-]*)=\S*$", span.strip())
            if m and m.group(1) not in skip:
                found.append((f.name, m.group(1)))
    return found


def keys(items):
    """The keys of a k=v,k=v list; placeholders (k=v, ..., NAME) are left out."""
    out = []
    for item in items.split(","):
        key = item.split("=")[0].strip()
        if "=" in item and NAME.match(key) and key not in ("k", "femu"):
            out.append(key)
    return out


# ---- femu-sim ------------------------------------------------------------------------

def sim_options():
    """femu-sim's command-line options, as sim/sim.c's argument loop compares them."""
    text = (ROOT / "sim" / "sim.c").read_text()
    opts = set(re.findall(r"(?:strcmp\(a, |g_str_has_prefix\(a, )\"(--[a-z-]+)=?\"", text))
    return opts


def sim_job_options():
    """The fio job-file options femu-sim carries out (sim/jobfile.c's table)."""
    text = (ROOT / "sim" / "jobfile.c").read_text()
    return set(re.findall(r"\{ \"([a-z_]+)\", opt_[a-z_]+ \}", text))


def documented_job_options(doc):
    """The options the "Job files" paragraph of doc lists as supported: the code spans
    between "Supported:" and "Host-side options", each `name` or `name=value`."""
    text = doc.read_text()
    m = re.search(r"\*\*Job files\*\*.*?Supported:(.*?)Host-side options", text, re.S)
    if not m:
        return set()
    names = {s.split("=")[0] for s in CODE_SPAN.findall(m.group(1))}
    return {n for n in names if NAME.match(n)}      # not values such as `R,W` or `%`


# ---- run scripts ---------------------------------------------------------------------

def launcher_options():
    """The options femu-launch.sh (every run-*.sh) takes: its case patterns."""
    text = (ROOT / "femu-scripts" / "femu-launch.sh").read_text()
    return set(re.findall(r"^\t(--[a-z-]+)(?: \| -h)?\)", text, re.M))


def script_options(name):
    """The --options a helper script of femu-scripts/ takes (argparse or a bash case)."""
    text = (ROOT / "femu-scripts" / name).read_text()
    if name.endswith(".py"):
        return set(re.findall(r"add_argument\(\"(--[a-z-]+)\"", text))
    return set(re.findall(r"^\t(--[a-z-]+)(?: \| -h)?\)", text, re.M))


# ---- links ---------------------------------------------------------------------------

def slug(heading):
    """The anchor GitHub gives a heading: lower case, markup and punctuation dropped
    (letters, digits, spaces, - and _ kept), spaces turned into -."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    kept = "".join(ch for ch in text
                   if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path):
    """The anchors of a markdown file's headings (a repeated one gets -1, -2, ...)."""
    seen, out = {}, set()
    for line in strip_fences(path.read_text()).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = slug(m.group(1))
        n = seen.get(s, 0)
        out.add(s if n == 0 else "%s-%d" % (s, n))
        seen[s] = n + 1
    return out


def links(path):
    """(target, text) of every markdown link in a file, fenced code left out."""
    text = strip_fences(path.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)
    return [(m.group(2), m.group(1)) for m in LINK.finditer(text)]


def broken_links(path):
    """The relative links of a file whose file or anchor does not exist, with why."""
    bad = []
    for target, _ in links(path):
        if re.match(r"^[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            bad.append("%s: %s: no such file" % (path.name, target))
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append("%s: %s: no heading with that anchor in %s" % (
                path.name, target, dest.name))
    return bad

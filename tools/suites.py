#!/usr/bin/env python3
"""Runs Debian's builds of AMD's ROCm library test suites (rocPRIM, hipCUB, rocRAND, rocBLAS) on vgpu; `./hk suites` calls it
inside the toolchain root.

The packages (tools/suites.packages, pinned versions) are fetched with the root's apt into a cache outside the
repository and extracted there with dpkg-deb; nothing is installed into the root. Every test program (googletest) runs
against vgpu's libamdhip64 with one emulation thread, several programs at once, each within a budget of CPU seconds
(so a loaded machine cuts no more than an idle one): a program past its budget, or stalled (no CPU used for a minute,
or little for four times its budget in wall time), is killed and the tests it finished still count (they are read from its output as it goes).

The filter lists (tests/suites/SUITE.filter) name what is not run and why (`exclude`), the failures vgpu is known not to
model and why (`explain`, the same reasons as docs/vgpu.md), and the budgets. Exit status: 1 if any test failed (or a
program died) that no `explain` entry covers.
"""
import argparse
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = REPO / "tools" / "suites.packages"
FILTERS = REPO / "tests" / "suites"
SUITES = ("rocprim", "rocrand", "hipcub", "rocblas")


# --- packages ---------------------------------------------------------------------------------------------------

@dataclass
class Package:
    name: str
    version: str
    suite: str  # the suite whose programs it holds; "-" a library every suite's programs load, "lib:SUITE" one suite's

    def serves(self, suite):
        return self.suite in ("-", f"lib:{suite}")

    def cached(self, cache: Path):
        return (cache / "x" / f"{self.name}_{self.version}" / ".extracted").exists()

    def deb(self, debs: Path) -> Path:
        """The downloaded .deb (amd64, or all for an architecture-independent package such as test data)."""
        stem = f"{self.name}_{self.version.split(':')[-1]}"
        found = [debs / f"{stem}_{arch}.deb" for arch in ("amd64", "all") if (debs / f"{stem}_{arch}.deb").exists()]
        return found[0] if found else debs / f"{stem}_amd64.deb"


def read_packages():
    packages = []
    for line in PACKAGES.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        spec, suite = line.split()
        name, version = spec.split("=", 1)
        packages.append(Package(name, version, suite))
    return packages


SKIP = 77  # ctest's SKIP_RETURN_CODE for the smoke subset


def fetch(cache: Path, pkg: Package, offline=False) -> Path:
    """The package extracted under the cache (downloaded first if its .deb is not there yet)."""
    debs, tree = cache / "debs", cache / "x" / f"{pkg.name}_{pkg.version}"
    stamp = tree / ".extracted"
    if stamp.exists():
        return tree
    if offline:
        print(f"[suites] skipped: {pkg.name}={pkg.version} is not in the cache {cache} (./hk suites fetches it; "
              f"this check never downloads)")
        sys.exit(SKIP)
    debs.mkdir(parents=True, exist_ok=True)
    deb = pkg.deb(debs)
    if not deb.exists():
        print(f"[suites] downloading {pkg.name}={pkg.version}", flush=True)
        # Downloaded as the (namespace's) root: apt's _apt user may not exist in a user namespace.
        cmd = ["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", f"{pkg.name}={pkg.version}"]
        if subprocess.run(cmd, cwd=debs).returncode != 0 or not pkg.deb(debs).exists():
            sys.exit(f"[suites] could not download {pkg.name}={pkg.version}: the root's package lists may be older or "
                     f"newer than that version (tools/toolchain run apt-get update, as the root's owner), or put "
                     f"{deb.name} into {debs} by hand")
        deb = pkg.deb(debs)
    print(f"[suites] extracting {deb.name}", flush=True)
    if tree.exists():
        shutil.rmtree(tree)
    tmp = tree.with_name(tree.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True)
    tmp.rename(tree)
    stamp.touch()
    return tree


# --- filter lists -------------------------------------------------------------------------------------------------

@dataclass
class Rule:
    program: str  # fnmatch pattern over program names
    tests: str    # googletest positive pattern(s), ':'-separated
    reason: str


@dataclass
class Filters:
    budget: float = 60
    budgets: dict = field(default_factory=dict)  # program pattern -> seconds
    excludes: list = field(default_factory=list)
    explains: list = field(default_factory=list)
    selects: list = field(default_factory=list)  # rocBLAS: (group, function patterns, records per key)

    def budget_for(self, program):
        """The last budget entry whose pattern matches the program (so a specific line can follow a general one)."""
        matching = [seconds for pattern, seconds in self.budgets.items() if fnmatch.fnmatchcase(program, pattern)]
        return matching[-1] if matching else self.budget


def read_filters(suite) -> Filters:
    f = Filters()
    path = FILTERS / f"{suite}.filter"
    if not path.exists():
        return f
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split(None, 3)
        kind = words[0]
        if kind == "budget" and len(words) == 2:
            f.budget = float(words[1])
        elif kind == "budget" and len(words) == 3:
            f.budgets[words[1]] = float(words[2])
        elif kind == "select" and len(words) == 4 and words[3].isdigit():
            f.selects.append((words[1], words[2], int(words[3])))
        elif kind in ("exclude", "explain") and len(words) == 4:
            (f.excludes if kind == "exclude" else f.explains).append(Rule(words[1], words[2], words[3]))
        else:
            sys.exit(f"{path}:{number}: expected 'budget [PROGRAM] SECONDS' or "
                     f"'exclude|explain PROGRAM TESTS REASON' or 'select GROUP FUNCTIONS PER_KEY', got: {raw}")
    return f


def gtest_match(name, patterns):
    """Like --gtest_filter: POSITIVE[-NEGATIVE], each ':'-separated shell patterns (googletest's '*' and '?', and
    also '[...]'; test names have no brackets)."""
    depth, split = 0, len(patterns)
    for i, c in enumerate(patterns):  # the first '-' outside a [...] class starts the negative part
        depth += (c == "[") - (c == "]")
        if c == "-" and depth == 0:
            split = i
            break
    positive, negative = patterns[:split], patterns[split + 1:]
    matches = lambda pats: any(fnmatch.fnmatchcase(name, p) for p in pats.split(":") if p)
    return matches(positive or "*") and not matches(negative)


# --- one program ----------------------------------------------------------------------------------------------------

@dataclass
class Result:
    suite: str
    program: str
    listed: int = 0       # tests the program has (within --filter)
    excluded: int = 0
    passed: int = 0
    failed: list = field(default_factory=list)      # unexplained
    explained: list = field(default_factory=list)   # failed, with an explain entry
    skipped: int = 0
    timed_out: int = 0    # not finished: the budget ran out or the program died (the one running and those not reached)
    instructions: int = 0
    launches: int = 0
    seconds: float = 0
    cpu_seconds: float = 0  # the program's CPU time (its budget counts this)
    status: str = "ok"
    log: str = ""
    excluded_by: dict = field(default_factory=dict)  # exclude reason -> tests
    milliseconds: dict = field(default_factory=dict)  # finished test -> its time as googletest reports it


# rocBLAS's parameter dump (", where GetParam() = {...}") ends its line, and the time follows on the next.
RESULT_LINE = re.compile(r"^\[\s*(OK|FAILED|SKIPPED)\s*\] ([^\s,]+)(?:, where .*?)?(?: \((\d+) ms\))?$")
RUN_LINE = re.compile(r"^\[ RUN      \] (\S+)$")


def list_tests(binary, env, gtest_filter, cwd, extra=()):
    out = subprocess.run([binary, *extra, "--gtest_list_tests", f"--gtest_filter={gtest_filter}"], env=env, cwd=cwd,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace",
                         timeout=120, start_new_session=True).stdout
    tests, case = [], None
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            # A test case's line ends with '.'; anything else is the program's own chatter.
            stripped = line.split("#")[0].strip()
            case = stripped if stripped.endswith(".") else None
        elif case:
            name = case + line.split("#")[0].strip()
            if "DISABLED_" not in name:  # listed, but googletest never runs them
                tests.append(name)
    return tests


def combine_filter(user_filter, negative):
    positive, _, user_negative = (user_filter or "*").partition("-")
    negatives = [n for n in (user_negative, negative) if n]
    return (positive or "*") + ("-" + ":".join(negatives) if negatives else "")


STALL_SECONDS = 60  # a program that uses no CPU for this long is waiting for something that does not come
STALL_FACTOR = 4  # a program using little CPU is stopped at this many times its budget in wall time
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """The CPU time a running process (all its threads) has used so far (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def wait_within(proc, budget, t0):
    """Waits for the program while its CPU time is within the budget. The budget counts CPU seconds, so a loaded
    machine (other programs, other work) does not cut tests that finish within it on an idle one. A program that uses
    no CPU for STALL_SECONDS (a host-side wait that never ends), or little CPU for STALL_FACTOR times its budget in
    wall time, is stopped as stalled. Returns (exit status, or None when stopped; status; the program's CPU seconds)."""
    pause, last_used, last_progress = 0.02, -1, t0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, "ok", usage.ru_utime + usage.ru_stime
        used, now = cpu_seconds(proc.pid), time.monotonic()
        if used != last_used:
            last_used, last_progress = used, now
        if used > budget or now - last_progress > STALL_SECONDS or now - t0 > STALL_FACTOR * budget:
            os.killpg(proc.pid, signal.SIGKILL)
            _, _, usage = os.wait4(proc.pid, 0)
            proc.returncode = -signal.SIGKILL
            return None, "budget" if used > budget else "stalled", usage.ru_utime + usage.ru_stime
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


@dataclass
class Job:
    suite: str
    binary: Path
    filters: Filters
    user_filter: str
    program: str = ""          # the row's name (default: the binary's)
    extra: tuple = ()          # arguments before googletest's
    env: dict = field(default_factory=dict)  # added to the environment


def run_program(job: Job, args, env, logs: Path) -> Result:
    suite, binary, filters, user_filter = job.suite, job.binary, job.filters, job.user_filter
    program = job.program or binary.name
    env = dict(env, **job.env)
    r = Result(suite, program)
    log = logs / f"{suite}.{program}.log"
    r.log = str(log)
    excludes = [rule for rule in filters.excludes if fnmatch.fnmatchcase(program, rule.program)]
    explains = [rule for rule in filters.explains if fnmatch.fnmatchcase(program, rule.program)]
    budget = args.budget if args.budget else filters.budget_for(program)
    with tempfile.TemporaryDirectory(prefix=f"hk-suite-{program}-") as cwd:
        totals = Path(cwd) / "vgpu-totals"
        penv = dict(env, HK_VGPU_TOTALS=str(totals))
        try:
            everything = list_tests(binary, penv, combine_filter(user_filter, ""), cwd, job.extra)
        except subprocess.TimeoutExpired:
            r.status = "list timeout"
            return r
        # The exclusions are applied here, by name, so an entry may be a whole googletest filter (POSITIVE-NEGATIVE:
        # everything but...); the program gets the names left.
        to_run, left_out = [], []
        for name in everything:
            rule = next((rule for rule in excludes if gtest_match(name, rule.tests)), None)
            if rule:
                r.excluded_by[rule.reason] = r.excluded_by.get(rule.reason, 0) + 1
                left_out.append(name)
            else:
                to_run.append(name)
        r.listed, r.excluded = len(everything), len(everything) - len(to_run)
        if not to_run:
            r.status = "excluded" if r.excluded else "no tests"
            log.write_text("")
            return r
        t0 = time.monotonic()
        # The shorter of the two lists (one argument holds at most 128 KiB): the names to run, or the user's filter
        # less the excluded names.
        if not r.excluded:
            gtest_filter = combine_filter(user_filter, "")
        elif len(left_out) < len(to_run):
            gtest_filter = combine_filter(user_filter, ":".join(left_out))
        else:
            gtest_filter = ":".join(to_run)
        cmd = [str(binary), *job.extra, "--gtest_color=no", f"--gtest_filter={gtest_filter}"]
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, env=penv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            rc, r.status, r.cpu_seconds = wait_within(proc, budget, t0)
        r.seconds = time.monotonic() - t0
        if totals.exists():
            words = totals.read_text().split()
            fields = dict(zip(words[::2], words[1::2]))
            r.instructions = int(fields.get("wave_instructions", 0))
            r.launches = int(fields.get("launches", 0))

    done, running = set(), None
    for line in log.read_text(errors="replace").splitlines():
        if m := RUN_LINE.match(line):
            running = m.group(1)
        elif m := RESULT_LINE.match(line):
            kind, name, ms = m.groups()
            if name in done:
                continue
            done.add(name)
            r.milliseconds[name] = int(ms or 0)
            running = None
            if kind == "OK":
                r.passed += 1
            elif kind == "SKIPPED":
                r.skipped += 1
            else:
                (r.explained if any(gtest_match(name, e.tests) for e in explains) else r.failed).append(name)
    if rc is None:
        r.timed_out = len(to_run) - len(done)
    elif rc != 0 and running:
        # Died inside a test: that test failed; the ones after it never ran.
        r.status = f"died ({signal.Signals(-rc).name})" if rc < 0 else f"died (exit {rc})"
        (r.explained if any(gtest_match(running, e.tests) for e in explains) else r.failed).append(running + " (died)")
        r.timed_out = len(to_run) - len(done) - 1
    elif rc != 0 and not r.failed and not r.explained:
        r.status = f"exit {rc}"
        if not any(gtest_match("*", e.tests) for e in explains if e.tests == "*"):
            r.failed.append(f"(program exited with {rc} outside any test)")
    elif r.failed:
        r.status = "FAILED"
    return r


# --- rocBLAS: one test program, a selection of its data ------------------------------------------------------------

# rocblas-test registers one googletest case per record of its data file (rocblas_gtest.data: 1.6 million records,
# 630,000 of them in the quick category, 930 MB that every start parses for minutes). The runner writes a data file
# per selection group instead (tests/suites/rocblas.filter, `select` lines) and starts the program on each, one row of
# the table per group. The file: "rocBLAS\0", one signature record, "ROCblas\0", then the records, each a copy of the
# client's `Arguments` struct. The signature record holds, in each field's bytes, (sig ^ i) with sig advancing by 89
# per field, so the field boundaries the selection reads are checked against it.
ROCBLAS_FIELDS = {  # name: (offset, size) in Arguments, rocBLAS 6.4
    "function": (0, 64), "name": (64, 64), "category": (128, 64),
    "a_type": (472, 4), "b_type": (476, 4), "c_type": (480, 4), "d_type": (484, 4), "compute_type": (488, 4),
    "transA": (553, 1), "transB": (554, 1), "side": (555, 1), "uplo": (556, 1), "diag": (557, 1),
}
ROCBLAS_TYPES = {150: "f16_r", 151: "f32_r", 152: "f64_r", 153: "f16_c", 154: "f32_c", 155: "f64_c", 160: "i8_r",
                 161: "u8_r", 162: "i32_r", 163: "u32_r", 164: "i8_c", 165: "u8_c", 166: "i32_c", 167: "u32_c",
                 168: "bf16_r", 169: "bf16_c", 170: "f8_r", 171: "bf8_r", 255: "invalid"}


def rocblas_layout(data: Path):
    """(header bytes, record size) of a rocBLAS test data file, after checking the fields the selection reads."""
    with open(data, "rb") as f:
        head = f.read(4096)
    trailer = head.find(b"ROCblas\0")
    if not head.startswith(b"rocBLAS\0") or trailer < 8:
        sys.exit(f"[suites] {data} is not a rocBLAS test data file (no rocBLAS/ROCblas header)")
    size, sig = trailer - 8, head[8:trailer]
    starts, pos, value, misses = {}, 0, 0, 0
    while pos < size:  # each field is a run of bytes (value ^ i); a value with no run here was a field elsewhere
        n = 0
        while pos + n < size and n < 256 and sig[pos + n] ^ n == value:
            n += 1
        if n:
            starts[pos], pos, misses = n, pos + n, 0
        elif (misses := misses + 1) == 256:  # no value fits: padding
            pos, misses = pos + 1, 0
        value = (value + 89) % 256
    for name, (offset, width) in ROCBLAS_FIELDS.items():
        if starts.get(offset) != width:
            sys.exit(f"[suites] {data}: the Arguments layout differs from rocBLAS 6.4's (field {name} at {offset}, "
                     f"{width} bytes); tools/suites.py's ROCBLAS_FIELDS must follow the packaged version")
    return head[:trailer + 8], size


def rocblas_field(record, name):
    offset, width = ROCBLAS_FIELDS[name]
    raw = record[offset:offset + width]
    if width == 64:
        return raw.split(b"\0", 1)[0].decode(errors="replace")
    if width == 4:
        return ROCBLAS_TYPES.get(int.from_bytes(raw, "little", signed=True), str(int.from_bytes(raw, "little")))
    return chr(raw[0]) if raw[0] else "-"


def rocblas_select(data: Path, selects, out_dir: Path):
    """Writes out_dir/GROUP.data for each `select GROUP FUNCTIONS PER_KEY` entry: of the quick records whose function
    matches FUNCTIONS (comma-separated shell patterns; the first group that matches takes the record), the first
    PER_KEY in file order of each key (function, test name, the five data types, transA/transB/side/uplo/diag), so
    every type and transpose combination of every function is kept. Deterministic; redone when the list changes."""
    stamp = out_dir / ".selected"
    spec = repr((sorted(ROCBLAS_FIELDS.items()), selects, data.stat().st_size))
    if stamp.exists() and stamp.read_text() == spec:
        return
    header, size = rocblas_layout(data)
    print(f"[suites] rocblas: selecting from {data} ({data.stat().st_size >> 20} MB)", flush=True)
    groups = {group: [] for group, _, _ in selects}
    kept = {}
    with open(data, "rb") as f:
        f.seek(len(header))
        while chunk := f.read(size * 8192):
            for i in range(0, len(chunk) - size + 1, size):
                record = chunk[i:i + size]
                if record[128:134] != b"quick\0":  # the category field
                    continue
                function = rocblas_field(record, "function")
                for group, patterns, per_key in selects:
                    if any(fnmatch.fnmatchcase(function, p) for p in patterns.split(",")):
                        key = tuple(rocblas_field(record, n) for n in ROCBLAS_FIELDS if n != "category")
                        if kept.get(key, 0) < per_key:
                            kept[key] = kept.get(key, 0) + 1
                            groups[group].append(record)
                        break
    out_dir.mkdir(parents=True, exist_ok=True)
    for group, records in groups.items():
        (out_dir / f"{group}.data").write_bytes(header + b"".join(records))
    stamp.write_text(spec)


def rocblas_jobs(args, tree: Path, trees, filters: "Filters", smoke):
    """One job per selection group of rocblas.filter (or the smoke list's), each the test program on its data."""
    binary = tree / "usr" / "libexec" / "rocm" / "librocblas4-tests" / "rocblas-test"
    data = trees["librocblas4-tests-data"] / "usr" / "share" / "librocblas4-tests" / "data" / "rocblas_gtest.data"
    libraries = sorted((trees["librocblas4"] / "usr" / "lib" / "x86_64-linux-gnu" / "rocblas").glob("*/library"))
    if not libraries:
        sys.exit(f"[suites] rocblas: no Tensile library under {trees['librocblas4']}")
    out_dir = args.cache / "rocblas-selection"
    rocblas_select(data, filters.selects, out_dir)
    env = {"ROCBLAS_TENSILE_LIBPATH": str(libraries[-1]), "GTEST_LISTENER": "PASS_LINE_IN_LOG",
           "HK_VGPU_ARCH": "gfx90a"}
    jobs = []
    for group, _, _ in filters.selects:
        if args.smoke and ("rocblas", group) not in smoke:
            continue
        jobs.append(Job("rocblas", binary, filters, smoke.get(("rocblas", group), args.filter), program=group,
                        extra=("--data", str(out_dir / f"{group}.data")), env=env))
    return jobs


# --- the table ----------------------------------------------------------------------------------------------------

COLUMNS = ("program", "tests", "passed", "failed", "explained", "skipped", "excluded", "not run",
           "instructions", "wall s", "cpu s", "status")


def row(r: Result):
    return (f"{r.suite}/{r.program}", r.listed, r.passed, len(r.failed), len(r.explained), r.skipped, r.excluded,
            r.timed_out, f"{r.instructions:.3g}" if r.instructions else "0", f"{r.seconds:.0f}", f"{r.cpu_seconds:.0f}", r.status)


def print_table(results, elapsed):
    rows = [row(r) for r in results]
    total = Result("all", f"{len(results)} programs")
    for r in results:
        for attr in ("listed", "passed", "skipped", "excluded", "timed_out", "instructions", "seconds", "cpu_seconds"):
            setattr(total, attr, getattr(total, attr) + getattr(r, attr))
        total.failed += r.failed
        total.explained += r.explained
    total.status = f"{elapsed:.0f} s elapsed"
    rows.append(row(total))
    widths = [max(len(str(x[i])) for x in rows + [COLUMNS]) for i in range(len(COLUMNS))]
    line = lambda cells: "  ".join(str(c).ljust(w) if i in (0, 11) else str(c).rjust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    print(line(COLUMNS))
    for x in rows[:-1]:
        print(line(x))
    print(line(["-" * w for w in widths]))
    print(line(rows[-1]), flush=True)


def main():
    p = argparse.ArgumentParser(prog="./hk suites", description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", metavar="NAME", help=f"suites to run: {', '.join(SUITES)} (default: all)")
    p.add_argument("--filter", default="", help="googletest filter applied to every program (PATTERNS[-PATTERNS])")
    p.add_argument("--budget", type=float, default=0, help="CPU seconds per program (default: the filter list's)")
    p.add_argument("--programs", default="*", help="only the programs matching these patterns (comma-separated, e.g. 'test_block_*,test_warp_*')")
    p.add_argument("--jobs", type=int, default=os.cpu_count(), help="programs run at once (default: the core count)")
    p.add_argument("--smoke", action="store_true",
                   help="only the fixed subset in tests/suites/smoke.list (under two minutes; a ctest entry)")
    p.add_argument("--offline", action="store_true",
                   help=f"never download: exit {SKIP} (skipped) when a package is not in the cache")
    p.add_argument("--cache", type=Path, default=os.environ.get("HK_SUITES_CACHE"),
                   help="where the packages are kept (default: $HK_SUITES_CACHE)")
    p.add_argument("--hip-lib", required=True, type=lambda a: Path(a).resolve(),
                   help="directory of vgpu's libamdhip64.so.6")
    p.add_argument("--json", type=Path, help="write the results here too (with each finished test's time)")
    p.add_argument("--slowest", type=int, default=0, metavar="N",
                   help="also list the N slowest finished tests (what to exclude when a program outgrows its budget)")
    args = p.parse_args()
    if not args.cache:
        if args.offline:
            print("[suites] skipped: no package cache (HK_SUITES_CACHE is not set; ./hk test sets it when "
                  "./hk suites has filled one)")
            sys.exit(SKIP)
        p.error("--cache or HK_SUITES_CACHE is needed")
    smoke = {}  # (suite, program) -> googletest filter
    if args.smoke:
        for line in (FILTERS / "smoke.list").read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                suite, program, gtest_filter = line.split()
                smoke[(suite, program)] = gtest_filter
        args.names = sorted({suite for suite, _ in smoke})
    names = args.names or list(SUITES)
    for n in names:
        if n not in SUITES:
            p.error(f"unknown suite {n} (one of {', '.join(SUITES)})")

    if not (args.hip_lib / "libamdhip64.so.6").exists():
        sys.exit(f"[suites] vgpu's runtime is not built: {args.hip_lib}/libamdhip64.so.6 is missing")
    packages = read_packages()
    if args.smoke and args.offline:
        # The smoke subset runs the suites whose packages ./hk suites has fetched (it never downloads).
        missing = [n for n in names if not all(p.cached(args.cache) for p in packages if p.suite == n or p.serves(n))]
        for n in missing:
            print(f"[suites] smoke: {n} skipped, its packages are not in the cache {args.cache} (./hk suites {n} "
                  f"fetches them)")
        names = [n for n in names if n not in missing]
        if not names:
            sys.exit(SKIP)
    libdirs = [str(args.hip_lib)]
    trees = {}
    for pkg in packages:
        if any(pkg.serves(n) for n in names):
            trees[pkg.name] = fetch(args.cache, pkg, args.offline)
            libdirs.append(str(trees[pkg.name] / "usr" / "lib" / "x86_64-linux-gnu"))
    jobs = []
    for pkg in packages:
        if pkg.suite in names:
            tree = fetch(args.cache, pkg, args.offline)
            filters = read_filters(pkg.suite)
            if pkg.suite == "rocblas":
                found = rocblas_jobs(args, tree, trees, filters, smoke)
            else:
                found = [Job(pkg.suite, binary, filters, smoke.get((pkg.suite, binary.name), args.filter))
                         for binary in sorted((tree / "usr" / "libexec" / "rocm" / pkg.name).glob("test_*"))
                         if not args.smoke or (pkg.suite, binary.name) in smoke]
            jobs += [j for j in found if any(fnmatch.fnmatchcase(j.program or j.binary.name, pat)
                                             for pat in args.programs.split(","))]
    if not jobs:
        sys.exit("[suites] no test programs match")

    # Longest first (by the last run's times), so the tail of the run stays short.
    logs = args.cache / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    last_run, last_times = [], {}
    try:
        last_run = json.loads((args.cache / "last-run.json").read_text())
        last_times = {f"{r['suite']}/{r['program']}": r["seconds"] for r in last_run}
    except (OSError, ValueError, KeyError, TypeError):
        last_run = []
    jobs.sort(key=lambda j: -last_times.get(f"{j.suite}/{j.program or j.binary.name}", 1e9))

    env = {k: v for k, v in os.environ.items() if not k.startswith("HK_VGPU_")}
    env.update(LD_LIBRARY_PATH=":".join(libdirs), HK_VGPU_THREADS="1")
    print(f"[suites] {len(jobs)} programs, {args.jobs} at a time, one emulation thread each; logs in {logs}",
          flush=True)
    t0 = time.monotonic()
    lock = threading.Lock()

    def one(job):
        r = run_program(job, args, env, logs)
        with lock:
            print(f"[suites] {r.suite}/{r.program}: {r.passed} passed, {len(r.failed)} failed, "
                  f"{len(r.explained)} explained, {r.skipped} skipped, {r.excluded} excluded, {r.timed_out} not run, "
                  f"{r.seconds:.0f} s, {r.cpu_seconds:.0f} CPU s ({r.status})", flush=True)
        return r

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(one, jobs))
    results.sort(key=lambda r: (SUITES.index(r.suite), r.program))
    elapsed = time.monotonic() - t0
    print()
    print_table(results, elapsed)
    failures = [(r, name) for r in results for name in r.failed]
    if failures:
        print("\nunexplained failures:")
        for r in results:
            for name in r.failed[:5]:
                print(f"  {r.suite}/{r.program}: {name}")
            if len(r.failed) > 5:
                print(f"  {r.suite}/{r.program}: ... and {len(r.failed) - 5} more")
            if r.failed:
                print(f"    (log: {r.log})")
    if args.slowest:
        timed = sorted(((ms, r.suite, r.program, name) for r in results for name, ms in r.milliseconds.items()),
                       reverse=True)
        print(f"\nthe {min(args.slowest, len(timed))} slowest tests:")
        for ms, suite, program, name in timed[:args.slowest]:
            print(f"  {ms / 1000:7.1f} s  {suite}/{program}  {name}")
    data = [vars(r) for r in results]
    if not (args.filter or args.smoke or args.budget):  # the times order the next run (whole programs only)
        last = {f"{r['suite']}/{r['program']}": r for r in last_run}
        last.update({f"{r['suite']}/{r['program']}": r for r in data})
        (args.cache / "last-run.json").write_text(json.dumps(list(last.values()), indent=1))
    if args.json:
        args.json.write_text(json.dumps(data, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

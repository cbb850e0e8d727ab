#!/usr/bin/env python3
"""Runs `wachet check --dynamic` of one or more wachet binaries against every hostile page of
wachet::testing::hostile (served by the engine's `hostile_server` example), one case at a
time, alternating binaries, and reports for each: the wall time, the exit code, the error line,
and the peak memory of the Chromium tree under wachet (RSS summed, and PSS summed from
smaps_rollup), sampled every 200 ms.

    cargo build --release -p wachet-server
    cargo build --release --features testing --example hostile_server
    python3 bench/scripts/hostile.py --hostile target/release/examples/hostile_server \
        --wachet before=/path/to/old/wachet --wachet after=target/release/wachet
"""
import argparse, os, subprocess, sys, time


def children():
    """pid -> ppid for every process."""
    out = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open(f'/proc/{name}/stat') as f:
                text = f.read()
            out[int(name)] = int(text[text.rfind(')') + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            pass
    return out


def tree(root):
    parents = children()
    found, frontier = [], [root]
    while frontier:
        p = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == p:
                found.append(pid)
                frontier.append(pid)
    return found


def field(pid, path, key):
    try:
        with open(f'/proc/{pid}/{path}') as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def run(binary, url, timeout):
    began = time.monotonic()
    proc = subprocess.Popen([binary, 'check', '--dynamic', '--timeout', str(timeout), url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak_rss = peak_pss = 0
    while proc.poll() is None:
        pids = tree(proc.pid)
        peak_rss = max(peak_rss, sum(field(p, 'status', 'VmRSS:') for p in pids))
        peak_pss = max(peak_pss, sum(field(p, 'smaps_rollup', 'Pss:') for p in pids))
        time.sleep(0.2)
        if time.monotonic() - began > timeout * 4 + 60:
            proc.kill()
    out, err = proc.communicate()
    took = time.monotonic() - began
    line = (err.strip().splitlines() or out.strip().splitlines() or [''])[-1][:110]
    return took, proc.returncode, line, peak_rss, peak_pss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--hostile', required=True)
    ap.add_argument('--wachet', action='append', required=True, help='NAME=PATH')
    ap.add_argument('--timeout', type=int, default=30)
    ap.add_argument('--cases', default='')
    args = ap.parse_args()
    server = subprocess.Popen([args.hostile], stdout=subprocess.PIPE, text=True)
    cases = []
    for _ in range(8):
        name, url = server.stdout.readline().split()
        cases.append((name, url))
    wanted = [c for c in cases if not args.cases or c[0] in args.cases.split(',')]
    binaries = [w.split('=', 1) for w in args.wachet]
    print('| case | build | time s | exit | peak RSS MB | peak PSS MB | last line |')
    print('|---|---|---|---|---|---|---|')
    try:
        for name, url in wanted:
            for label, binary in binaries:
                took, code, line, rss, pss = run(binary, url, args.timeout)
                print(f'| {name} | {label} | {took:.1f} | {code} | {rss / 1e6:.0f} | '
                      f'{pss / 1e6:.0f} | {line} |', flush=True)
    finally:
        server.kill()


if __name__ == '__main__':
    sys.exit(main())

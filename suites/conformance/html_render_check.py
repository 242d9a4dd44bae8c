#!/usr/bin/env python3
"""Renders an emm-certify HTML certificate (or index) in headless Chromium and checks it.

    html_render_check.py --chromium PATH --html FILE --expect-clauses ID,ID,... --work DIR

Checks, against the page as Chromium rendered it:
  * the DOM (--dump-dom) holds one row per expected clause (data-clause="ID") and the verdict;
  * the screenshot is not blank: many non-white pixels, several distinct colours, and the
    green of a passing cell.
Exits 0 when every check holds, 1 naming the first that failed, 77 (CTest's skip) when no
Chromium is installed.
"""

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]


def read_png(path):
    """The pixels of an 8-bit RGB or RGBA, non-interlaced PNG as rows of (r, g, b) tuples."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path} is not a PNG")
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace != 0:
                raise SystemExit(f"{path}: unsupported PNG (depth {depth}, colour {colour})")
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous, at = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            upper_left = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - upper_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - upper_left)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else upper_left)
                line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, channels)])
        previous = line
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--chromium", default="chromium")
    parser.add_argument("--html", required=True)
    parser.add_argument("--expect-clauses", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    chromium = shutil.which(args.chromium)
    if chromium is None:
        print(f"SKIP: no Chromium ({args.chromium}); install Debian's chromium to run this test")
        return 77
    os.makedirs(args.work, exist_ok=True)
    url = "file://" + os.path.abspath(args.html)
    with tempfile.TemporaryDirectory() as profile:
        common = [chromium, *FLAGS, f"--user-data-dir={profile}"]
        dom = subprocess.run(common + ["--dump-dom", url], capture_output=True, text=True,
                             timeout=120).stdout
        shot = os.path.join(args.work, "screenshot.png")
        subprocess.run(common + [f"--screenshot={shot}", "--window-size=1200,1600", url],
                       capture_output=True, timeout=120)
    for clause in args.expect_clauses.split(","):
        if f'data-clause="{clause}"' not in dom:
            print(f"FAIL: the rendered DOM has no row for {clause}")
            return 1
    if 'id="verdict"' not in dom and 'id="index"' not in dom:
        print("FAIL: the rendered DOM has no verdict")
        return 1
    if not os.path.exists(shot):
        print("FAIL: Chromium wrote no screenshot")
        return 1
    rows = read_png(shot)
    pixels = [pixel for row in rows for pixel in row]
    inked = sum(1 for p in pixels if p != (255, 255, 255))
    colours = len(set(pixels))
    greens = sum(1 for r, g, b in pixels if g > r + 20 and g > b + 20)
    print(f"rendered {len(rows[0])}x{len(rows)}: {inked} non-white pixels, {colours} colours, "
          f"{greens} green")
    if inked < len(pixels) // 50 or colours < 8:
        print("FAIL: the screenshot is blank or nearly so")
        return 1
    if greens < 500:
        print("FAIL: no passing cell is shown in green")
        return 1
    print("OK: the certificate renders with every clause")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Shared by the converters that write a LICENSE.md next to the converted weights: read the MIT
licence text a source package ships, and write LICENSE.md with that text quoted at the end.

Import with `sys.path.insert(0, <this directory>)` (the tools are scripts, not a package).
"""
import os


def read_mit_licence(path, expect, shipper):
    """The text of the licence file at `path`. `expect(cond, what)` (the converter's own check)
    fails with "`shipper` ships an MIT LICENSE file" unless the text is the MIT licence."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    expect(text.startswith("MIT License"), f"{shipper} ships an MIT LICENSE file")
    return text


def write_licence_md(out_dir, body, text):
    """Writes `out_dir`/LICENSE.md: `body` (the source and licence sections, ending with the
    heading of the shipped text), then the licence `text` in a ```text block. Returns its
    path."""
    path = os.path.join(out_dir, "LICENSE.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write(body + "```text\n" + text.rstrip("\n") + "\n```\n")
    return path

#!/usr/bin/env python3
"""Rebuilds every NAME.bplist fixture from its NAME.xml twin.

Walks the folder this script is in, recursively. XML files whose name contains "invalid"
are fixtures for parse errors and have no twin. Keys are written in file order
(sort_keys=False), so the binary twin parses to the same ordered dictionaries as the XML,
and a key written twice stays written twice (`check` reports duplicates, so the twin must keep them).

Usage: python3 Tests/ATSPolicyTests/Fixtures/make-binary-fixtures.py
"""
import pathlib
import plistlib

FIXTURES = pathlib.Path(__file__).resolve().parent


class EntryList(dict):
    """A dict that also remembers every (key, value) pair it was given, duplicates included.

    plistlib's XML reader stores entries with `d[key] = value` and its binary writer walks
    `d.items()`, so handing it this type keeps repeated keys, in file order, in the twin.
    """

    def __init__(self):
        super().__init__()
        self._entries = []

    def __setitem__(self, key, value):
        self._entries.append((key, value))
        super().__setitem__(key, value)

    def items(self):
        return list(self._entries)


def main() -> None:
    for xml_path in sorted(FIXTURES.rglob("*.xml")):
        if "invalid" in xml_path.name:
            continue
        with xml_path.open("rb") as xml_file:
            value = plistlib.load(xml_file, fmt=plistlib.FMT_XML, dict_type=EntryList)
        binary_path = xml_path.with_suffix(".bplist")
        with binary_path.open("wb") as binary_file:
            plistlib.dump(value, binary_file, fmt=plistlib.FMT_BINARY, sort_keys=False)
        print(f"wrote {binary_path.relative_to(FIXTURES)}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Rebuilds every NAME.bplist fixture from its NAME.xml twin.

Walks the folder this script is in, recursively. XML files whose name contains "invalid"
are fixtures for parse errors and have no twin. Keys are written in file order
(sort_keys=False), so the binary twin parses to the same ordered dictionaries as the XML.

Usage: python3 Tests/ATSPolicyTests/Fixtures/make-binary-fixtures.py
"""
import pathlib
import plistlib

FIXTURES = pathlib.Path(__file__).resolve().parent


def main() -> None:
    for xml_path in sorted(FIXTURES.rglob("*.xml")):
        if "invalid" in xml_path.name:
            continue
        with xml_path.open("rb") as xml_file:
            value = plistlib.load(xml_file, fmt=plistlib.FMT_XML)
        binary_path = xml_path.with_suffix(".bplist")
        with binary_path.open("wb") as binary_file:
            plistlib.dump(value, binary_file, fmt=plistlib.FMT_BINARY, sort_keys=False)
        print(f"wrote {binary_path.relative_to(FIXTURES)}")


if __name__ == "__main__":
    main()

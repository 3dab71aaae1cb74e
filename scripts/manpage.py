#!/usr/bin/env python3
"""Manual pages (mdoc) for atsproxy and atsproxyctl, from a built binary's --experimental-dump-help.

    scripts/manpage.py --section 8 --output-directory DIR path/to/atsproxy
    scripts/manpage.py --section 1 --output-directory DIR path/to/atsproxyctl

writes DIR/atsproxy.8, or DIR/atsproxyctl.1 and one page per subcommand (DIR/atsproxyctl-check.1,
DIR/atsproxyctl-ca-init.1, ...), and prints their paths. The options, arguments, abstracts and
discussions are swift-argument-parser's own (the JSON its generate-manual plugin reads); what the
help text has no room for (exit statuses, signals, files, the documents) is added below, per tool.

swift-argument-parser's plugin (swift package plugin generate-manual) is not used: it builds every
product of the package through SwiftPM and gives every executable the same section, while
`make install INSTALL_FROM=DIR` installs prebuilt binaries (as root) without touching .build.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys

# Sections added after the generated ones, per page name: (title, mdoc lines).
EXTRA = {
    "atsproxy": [
        ("SIGNALS", [
            ".Bl -tag -width SIGTERM",
            ".It Dv SIGHUP",
            "Reload: read the config file and the policy again and apply them to new connections;",
            "a broken file changes nothing.",
            "The outcome goes to standard error",
            ".Po Nm atsproxyctl Cm reload",
            "does the same and prints it",
            ".Pc .",
            ".It Dv SIGTERM , SIGINT",
            "Graceful stop: the listeners close, open tunnels and requests get",
            ".Fl -shutdown-timeout",
            "seconds to finish.",
            "A second signal closes everything at once.",
            ".It Dv SIGUSR1",
            "Open the log file again, after logrotate moved it.",
            ".El",
        ]),
        ("FILES", [
            ".Bl -tag -width Ds -compact",
            ".It Pa /etc/atsproxy/atsproxy.conf",
            "the settings, one",
            ".Ql key = value",
            "per line, read with",
            ".Fl -config ;",
            "every flag is a key of the same name",
            ".It Pa /etc/atsproxy/ats-defaults.plist",
            "the default policy",
            ".It Pa /run/atsproxy/control.sock",
            "the control socket",
            ".Nm atsproxyctl",
            "talks to",
            ".It Pa /var/lib/atsproxy/ca",
            "intercept mode's CA",
            ".Pq Pa ca.pem , ca.key",
            ".It Pa /var/log/atsproxy",
            "log files, with",
            ".Fl -log-file",
            ".El",
        ]),
        ("EXIT STATUS", [
            "0 after a graceful stop, or when",
            ".Fl -check-config",
            "finds the configuration valid;",
            "1 when the configuration, the policy or a file they name is wrong (the message names the",
            "file, the line and the key), or a listener cannot be bound.",
        ]),
        ("EXAMPLES", [
            "Judge an app's traffic by its Info.plist, for phones on the LAN:",
            ".Bd -literal -offset indent",
            "atsproxy --listen 192.168.1.20:8080 --allow-client 192.168.1.0/24 \\e",
            "    --policy MyApp/Info.plist",
            ".Ed",
            ".Pp",
            "Check an edited configuration before a reload:",
            ".Bd -literal -offset indent",
            "atsproxy --check-config --config /etc/atsproxy/atsproxy.conf",
            ".Ed",
        ]),
        ("SEE ALSO", [
            ".Xr atsproxyctl 1 ,",
            ".Xr systemctl 1 ,",
            ".Xr logrotate 8",
            ".Pp",
            "The documents in the source repository's",
            ".Pa docs/",
            "directory:",
            ".Pa daemon.md",
            "(flags, config file, reloads, systemd),",
            ".Pa connections.md ,",
            ".Pa intercept.md ,",
            ".Pa log-format.md ,",
            ".Pa onboarding.md",
            "and",
            ".Pa ats-rules.md .",
        ]),
    ],
    "atsproxyctl": [
        ("SEE ALSO", [
            ".Xr atsproxy 8",
            ".Pp",
            "The source repository's",
            ".Pa docs/atsproxyctl.md",
            "shows every command with examples.",
        ]),
    ],
}


def characters(text):
    """Backslashes escaped, and every character beyond ASCII as groff's \\[uXXXX]: man(1) renders the
    pages with groff, which reads its input as Latin-1 unless told otherwise."""
    text = text.replace("\\", "\\e")
    return "".join(c if ord(c) < 128 else "\\[u%04X]" % ord(c) for c in text)


def escape(text):
    """Text for mdoc text lines: one sentence a line (roff puts sentence spacing only at a line's
    end), no line starting with a control character."""
    lines = []
    for line in characters(text).split("\n"):
        for sentence in re.split(r"(?<=[a-z0-9)][.!?])\s+(?=[A-Z(`'\"])", line.strip()):
            if sentence.startswith(".") or sentence.startswith("'"):
                sentence = "\\&" + sentence
            lines.append(sentence)
    return lines


def paragraphs(text):
    """mdoc lines for a help text: blank lines become .Pp, indented lines (the examples) a literal
    display."""
    out = []
    for block in [b for b in text.strip("\n").split("\n\n") if b.strip()]:
        if out:
            out.append(".Pp")
        literal = False
        for line in block.split("\n"):
            indented = line.startswith("  ")
            if indented and not literal:
                out.append(".Bd -literal -offset indent")
            elif literal and not indented:
                out.append(".Ed")
            literal = indented
            if indented:
                text = characters(line[2:])
                out.append("\\&" + text if text.startswith((".", "'")) else text)
            else:
                out.extend(part for part in escape(line) if part)
        if literal:
            out.append(".Ed")
    return out


def macro_argument(text):
    """A word for a macro line, quoted when it holds spaces."""
    text = characters(text).replace('"', "\\(dq")
    return '"%s"' % text if (" " in text or not text) else text


def flag_names(argument):
    names = argument.get("names") or []
    parts = []
    for name in names:
        if name["kind"] == "long":
            parts.append("Fl -" + name["name"])
        elif name["kind"] == "short":
            parts.append("Fl " + name["name"])
        else:
            parts.append("Fl " + name["name"])
    return parts


def synopsis_item(argument):
    value = macro_argument(argument.get("valueName") or "value")
    if argument["kind"] == "positional":
        item = "Ar " + value
    else:
        item = flag_names(argument)[0] if argument.get("names") else "Fl " + value
        if argument["kind"] == "option":
            item += " Ar " + value
    if argument.get("isRepeating"):
        item += " No ..."
    return ("Op " + item) if argument.get("isOptional") else item


def displayed_arguments(command):
    return [a for a in command.get("arguments") or [] if a.get("shouldDisplay", True)]


def displayed_subcommands(command):
    return [c for c in command.get("subcommands") or [] if c.get("shouldDisplay", True) and c["commandName"] != "help"]


def argument_list(arguments):
    out = [".Bl -tag -width 6n"]
    for argument in arguments:
        if argument["kind"] == "positional":
            head = "Ar " + macro_argument(argument.get("valueName") or "value")
        else:
            head = " , ".join(flag_names(argument))
            if argument["kind"] == "option":
                head += " Ar " + macro_argument(argument.get("valueName") or "value")
        if argument.get("isRepeating"):
            head += " No ..."
        out.append(".It " + head)
        text = argument.get("abstract") or ""
        if argument.get("defaultValue") and "default" not in text:
            text += " (default: %s)" % argument["defaultValue"]
        if argument.get("allValues") and argument["kind"] != "flag":
            listed = all(value in text for value in argument["allValues"])
            if not listed:
                text += " Values: %s." % ", ".join(argument["allValues"])
        out.extend(line for line in escape(text) if line)
        if argument.get("discussion"):
            out.append(".Pp")
            out.extend(paragraphs(argument["discussion"]))
    out.append(".El")
    return out


def page(command, path, section, date, version, root_name):
    """The mdoc source of one page: `path` is the command's words (["atsproxyctl", "ca", "init"])."""
    name = "-".join(path)
    out = [
        ".\\\" Generated by scripts/manpage.py from %s --experimental-dump-help; do not edit." % root_name,
        ".Dd %s" % date,
        ".Dt %s %s" % (name.upper(), section),
        ".Os %s" % macro_argument("atsproxy " + version if version else "atsproxy"),
        ".Sh NAME",
        ".Nm %s" % name,
        ".Nd %s" % " ".join(escape(command.get("abstract") or name)).rstrip("."),
        ".Sh SYNOPSIS",
    ]
    arguments = displayed_arguments(command)
    subcommands = displayed_subcommands(command)
    invocation = ".Nm %s" % name if len(path) == 1 else ".Nm %s" % " ".join(path)
    if subcommands:
        out.append(invocation)
        out.append(".Ar subcommand")
        out.append(".Op Ar options")
    else:
        out.append(invocation)
        out.extend("." + synopsis_item(a) for a in arguments)
    out.append(".Sh DESCRIPTION")
    if command.get("abstract"):
        out.extend(escape(command["abstract"]))
    if command.get("discussion"):
        out.append(".Pp")
        out.extend(paragraphs(command["discussion"]))
    if subcommands:
        out.append(".Sh COMMANDS")
        out.append(".Bl -tag -width 6n")
        for sub in subcommands:
            out.append(".It Cm %s" % sub["commandName"])
            out.extend(escape(sub.get("abstract") or ""))
            out.append("See")
            out.append(".Xr %s %s ." % ("-".join(path + [sub["commandName"]]), section))
        out.append(".El")
    if arguments:
        out.append(".Sh OPTIONS")
        out.extend(argument_list(arguments))
    for title, lines in EXTRA.get(name, []):
        out.append(".Sh %s" % title)
        out.extend(lines)
    if len(path) > 1:
        out.append(".Sh SEE ALSO")
        out.append(".Xr %s %s" % ("-".join(path[:-1]), section))
    return "\n".join(out) + "\n"


def pages(command, path, section, date, version, root_name):
    yield "-".join(path), page(command, path, section, date, version, root_name)
    for sub in displayed_subcommands(command):
        yield from pages(sub, path + [sub["commandName"]], section, date, version, root_name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--section", required=True, choices=["1", "8"])
    parser.add_argument("--output-directory", required=True)
    parser.add_argument("binary")
    options = parser.parse_args()

    dump = subprocess.run([options.binary, "--experimental-dump-help"], check=True, capture_output=True, text=True)
    command = json.loads(dump.stdout)["command"]
    version = subprocess.run([options.binary, "--version"], capture_output=True, text=True).stdout.strip()
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0")) or None
    when = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc) if epoch else datetime.datetime.now(datetime.timezone.utc)
    date = "%s %d, %d" % (when.strftime("%B"), when.day, when.year)

    os.makedirs(options.output_directory, exist_ok=True)
    root_name = command["commandName"]
    for name, text in pages(command, [root_name], options.section, date, version, root_name):
        path = os.path.join(options.output_directory, "%s.%s" % (name, options.section))
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

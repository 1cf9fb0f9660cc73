"""Reading ibnetdiscover's text: every line understood, or an error that says where; a cut dump is never a fabric."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from fabric_import.cases import CAPTURED

from clusterforge.cli import cli
from clusterforge.fabric_import import DumpError, parse_dump


def prod_lines() -> list[str]:
    return CAPTURED["prod"].text().splitlines(keepends=True)


def test_a_whole_dump_reads_with_guids_and_descriptions():
    nodes = parse_dump(CAPTURED["prod"].text())
    switches = [n for n in nodes.values() if n.kind == "switch"]
    cas = [n for n in nodes.values() if n.kind == "ca"]
    assert (len(switches), len(cas)) == (6, 32)
    ca = next(n for n in cas if n.description == "gpu-node-001 mlx5_0")
    assert ca.guid == ca.id[2:] and len(ca.guid) == 16
    assert ca.port_guids == {f"{int(ca.guid, 16) + 1:016x}"}
    leaf = nodes[ca.links[1].peer]
    assert leaf.description == "leaf01" and leaf.links[ca.links[1].peer_port].peer == ca.id


def test_a_dump_cut_inside_a_line_names_that_line():
    lines = prod_lines()
    cut = next(i for i, line in enumerate(lines) if line.startswith("Ca\t")) + 1  # into the first CA's port line
    text = "".join(lines[:cut]) + lines[cut][:20]
    with pytest.raises(DumpError, match=rf"^dump.txt:{cut + 1}: not a line of ibnetdiscover output \(the last "
                                        r"line: the dump looks cut short\)"):
        parse_dump(text, "dump.txt")


def test_a_dump_cut_between_records_is_caught_by_its_links():
    lines = prod_lines()
    first_ca = next(i for i, line in enumerate(lines) if line.startswith("vendid") and lines[i + 4].startswith("Ca"))
    with pytest.raises(DumpError, match=rf"links to H-[0-9a-f]{{16}}, which has no record of its own: the dump is "
                                        rf"truncated \(it ends at line {first_ca}\)"):
        parse_dump("".join(lines[:first_ca]), "dump.txt")


def test_a_switch_record_cut_short_is_caught_by_its_peers():
    lines = prod_lines()
    # Drop the last port line of the last switch record before the CAs: its peer still lists the link.
    last_switch_port = max(i for i, line in enumerate(lines) if line.startswith("[") and '"S-' in line
                           and not line.startswith("[1](") and i < next(
                               j for j, text in enumerate(lines) if text.startswith("Ca\t")))
    text = "".join(lines[:last_switch_port] + lines[last_switch_port + 1:])
    with pytest.raises(DumpError, match="which lists no such port: the dump is truncated"):
        parse_dump(text, "dump.txt")


@pytest.mark.parametrize(("text", "message"), [
    ("", "dump.txt: holds no switch or CA record"),
    ("# Topology file: generated on ...\n\n", "dump.txt: holds no switch or CA record"),
    ("SW     2    19 0x0002c90200400920 4x SDR                    - CA     4     1 0x0002c9020040206f ( )\n",
     r"dump.txt:1: this is `ibnetdiscover -p` \(ports report\) output"),
    ("hello\n", "dump.txt:1: not a line of ibnetdiscover output"),
    ('[1]\t"H-0000000000100000"[1](100001) \t\t# "n1" lid 0 4xSDR\n', "dump.txt:1: a port line outside any"),
])
def test_what_is_not_a_dump(text, message):
    with pytest.raises(DumpError, match=f"^{message}"):
        parse_dump(text, "dump.txt")


def test_the_same_fabric_twice_is_one_fabric():
    text = CAPTURED["prod"].text()
    assert parse_dump(text + text).keys() == parse_dump(text).keys()


def test_cli_says_where_and_exits_2(tmp_path):
    dump = tmp_path / "cut.txt"
    dump.write_text("".join(prod_lines()[:40]))
    result = CliRunner().invoke(cli, ["fabric", "import", str(dump)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {dump}:")
    assert "truncated" in result.stderr and result.stdout == ""

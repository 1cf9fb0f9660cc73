"""The exporter's command line: where it listens and how long a command may take, read or refused."""

from __future__ import annotations

import pytest

from clusterforge import gate
from clusterforge.exporter.main import arguments
from clusterforge.gate.store import Store
from clusterforge.render import admission


@pytest.mark.parametrize(("listen", "address"), [
    (":9341", ("0.0.0.0", 9341)),
    ("127.0.0.1:9100", ("127.0.0.1", 9100)),
    ("[::]:9341", ("::", 9341)),
    ("[::1]:80", ("::1", 80)),
    ("ctl01:9341", ("ctl01", 9341)),
])
def test_listen_address(listen, address):
    assert arguments(["--listen", listen]).listen == address


def test_defaults():
    args = arguments([])

    assert (args.listen, args.timeout, args.once) == (("0.0.0.0", 9341), 10.0, False)


@pytest.mark.parametrize("argv", [["--listen", "9341"], ["--listen", ":0"], ["--listen", ":65536"],
                                  ["--listen", "host:port"], ["--timeout", "0"], ["--timeout", "-1"],
                                  ["--timeout", "soon"]])
def test_refused(argv, capsys):
    with pytest.raises(SystemExit) as exit:
        arguments(argv)

    assert exit.value.code == 2
    assert argv[1] in capsys.readouterr().err


def test_the_records_and_plan_read_by_default_are_where_the_gate_keeps_them():
    args = arguments([])

    assert args.records == f"{gate.STATE_DIR}/records" == str(Store(gate.STATE_DIR).records_dir)
    assert args.plan == gate.PLAN == admission.PATH

import socket

import ports
from ports import ephemeral_range, free_port


def test_a_free_port_is_below_the_ephemeral_range_and_a_server_can_listen_on_it():
    low, _ = ephemeral_range()
    ports = {free_port() for _ in range(20)}
    assert all(20000 <= port < low for port in ports), ports
    assert len(ports) > 1  # picked at random: two tests' servers do not queue for one port
    with socket.socket() as server:
        server.bind(("", free_port("")))
        server.listen()


def test_a_port_taken_is_passed_over(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port()))
        port = taken.getsockname()[1]
        taken.listen()
        spare = free_port()
        # The taken port drawn first: the next one drawn is given.
        monkeypatch.setattr(ports.random, "sample", lambda population, k: [port, spare])
        assert free_port() == spare

"""The GPU and InfiniBand parsers and comparisons against output captured on real H100 machines (fixtures/README.md
names each source). This machine has no GPU and no HCA: these captures are the only real GPU output the tests see."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from clusterforge.check import compare
from clusterforge.health import parse
from clusterforge.model import Gpus, Profile

FIXTURES = Path(__file__).parent / "fixtures"

DGX_H100 = Profile("dgx-h100", sockets=2, cores_per_socket=56, threads_per_core=2, real_memory=2_000_000,
                   gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3],
                                                                                      1: [4, 5, 6, 7]}))
FILES = tuple(f"/dev/nvidia{i}" for i in range(8))


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_nvidia_smi_query_of_an_h100_sxm_board_lists_eight_gpus_with_minor_numbers_and_bus_ids():
    gpus = parse.nvidia_smi_query(text("h100-sxm-x8.nvidia-smi-q.txt"))
    assert [g.index for g in gpus] == list(range(8))
    assert {g.name for g in gpus} == {"NVIDIA H100 80GB HBM3"}
    assert [g.minor for g in gpus] == list(range(8))
    assert [g.bus_id for g in gpus] == ["00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0",
                                        "00000000:5D:00.0", "00000000:9A:00.0", "00000000:AB:00.0",
                                        "00000000:BA:00.0", "00000000:DB:00.0"]


def test_topo_of_a_dgx_h100_puts_gpus_0_to_3_on_numa_0_and_4_to_7_on_numa_1():
    found = parse.nvidia_smi_topology(text("dgx-h100.nvidia-smi-topo-m.txt"))
    assert [(a.index, a.numa) for a in found] == [(0, 0), (1, 0), (2, 0), (3, 0), (4, 1), (5, 1), (6, 1), (7, 1)]
    assert found[0].cpus == "0-55,112-167" and found[7].cpus == "56-111,168-223"


def test_the_dgx_h100_inventory_profile_matches_the_captured_gpus():
    # The two captures come from two different 8 x H100 machines (an HGX board and a DGX); together they are one
    # node whose GPU i is /dev/nvidia<i> as on both.
    query = parse.nvidia_smi_query(text("h100-sxm-x8.nvidia-smi-q.txt"))
    topo = parse.nvidia_smi_topology(text("dgx-h100.nvidia-smi-topo-m.txt"))
    detail, problems = compare.gpus(DGX_H100, FILES, query, topo)
    assert problems == []
    assert detail == "8 x NVIDIA H100 80GB HBM3"


def test_a_gpu_map_that_puts_a_gpu_on_the_wrong_socket_is_named():
    query = parse.nvidia_smi_query(text("h100-sxm-x8.nvidia-smi-q.txt"))
    topo = parse.nvidia_smi_topology(text("dgx-h100.nvidia-smi-topo-m.txt"))
    wrong = DGX_H100.model_copy(update={"gpus": DGX_H100.gpus.model_copy(
        update={"sockets": {0: [0, 1, 2, 4], 1: [3, 5, 6, 7]}})})
    _, problems = compare.gpus(wrong, FILES, query, topo)
    assert [p.message for p in problems] == [
        "GPU 4 (/dev/nvidia4, bus 00000000:9A:00.0) is on socket 1, the inventory says 0 (gres.conf would bind it "
        "to the wrong cores)",
        "GPU 3 (/dev/nvidia3, bus 00000000:5D:00.0) is on socket 0, the inventory says 1 (gres.conf would bind it "
        "to the wrong cores)"]


def test_minor_numbers_not_in_index_order_are_followed_to_the_right_gpu():
    # Derived from the capture, not captured: minors reversed, as a board whose device nodes were created in
    # another order would list them. /dev/nvidia0 is then nvidia-smi's GPU 7, on NUMA node 1.
    query = [dataclasses.replace(g, minor=7 - g.index) for g in
             parse.nvidia_smi_query(text("h100-sxm-x8.nvidia-smi-q.txt"))]
    topo = parse.nvidia_smi_topology(text("dgx-h100.nvidia-smi-topo-m.txt"))
    _, problems = compare.gpus(DGX_H100, FILES, query, topo)
    assert len(problems) == 8
    assert problems[0].message.startswith("GPU 0 (/dev/nvidia0, bus 00000000:DB:00.0) is on socket 1")


def test_a_missing_gpu_and_another_model_are_findings():
    query = parse.nvidia_smi_query(text("h100-sxm-x8.nvidia-smi-q.txt"))[:7]  # derived: one GPU fell off the bus
    topo = parse.nvidia_smi_topology(text("dgx-h100.nvidia-smi-topo-m.txt"))
    a100 = DGX_H100.model_copy(update={"gpus": DGX_H100.gpus.model_copy(update={"type": "a100"})})
    _, problems = compare.gpus(a100, FILES, query, topo)
    messages = [p.message for p in problems]
    assert messages[0] == "nvidia-smi sees 7 GPUs, the inventory says 8"
    assert messages[1] == "GPU model NVIDIA H100 80GB HBM3 is not the inventory's type 'a100'"
    assert "GPU 7 (/dev/nvidia7): nvidia-smi lists no GPU with that minor number" in messages


def test_ibstat_of_an_h100_node_has_eight_active_400g_infiniband_ports_and_an_ethernet_bond():
    ports = parse.ibstat(text("h100.ibstat.txt"))
    ib = [p for p in ports if p.link_layer == "InfiniBand"]
    assert len(ib) == 8 and {(p.state, p.physical_state, p.rate) for p in ib} == {("Active", "LinkUp", 400)}
    assert [p.ca for p in ports if p.link_layer == "Ethernet"] == ["mlx5_bond_0"]
    assert compare.infiniband(ports) == ("8/8 IB ports Active at 400 Gb/s", [])


def test_ethernet_ports_down_beside_active_infiniband_ones_are_not_judged():
    # The captured node's Down ports are Ethernet (ConnectX-6 Dx, RoCE): not the compute fabric.
    ports = parse.ibstat(text("h100-some-down.ibstat.txt"))
    assert {p.state for p in ports if p.link_layer == "Ethernet"} == {"Active", "Down"}
    assert compare.infiniband(ports) == ("8/8 IB ports Active at 400 Gb/s", [])


def test_an_infiniband_port_down_is_named_with_its_state():
    # Derived from the capture, not captured: no public H100 ibstat with an InfiniBand port down was found, so
    # mlx5_4's port is set Down/Polling (what a pulled cable shows) in the captured text.
    captured = text("h100.ibstat.txt")
    at = captured.index("CA 'mlx5_4'")
    broken = captured[:at] + captured[at:].replace("State: Active", "State: Down", 1).replace(
        "Physical state: LinkUp", "Physical state: Polling", 1)
    detail, problems = compare.infiniband(parse.ibstat(broken))
    assert detail == "7/8 IB ports Active at 400 Gb/s"
    assert [p.message for p in problems] == ["mlx5_4 port 1: Down, Polling"]


def test_outputs_that_are_not_the_commands_are_refused_not_guessed():
    import pytest

    for function in (parse.slurmd_config, parse.nvidia_smi_query, parse.nvidia_smi_topology, parse.ibstat):
        with pytest.raises(parse.ParseError):
            function("bash: command not found")


# -- a real H200, captured by this project (fixtures/README.md) ---------------------------------------------------

H200_PCIE = Profile("h200-x1", sockets=1, cores_per_socket=16, real_memory=120_000,
                    gpus=Gpus(type="h200", count=1, files="/dev/nvidia0", sockets={0: [0]}))


def test_nvidia_smi_query_of_a_driver_580_h200_reads_its_name_bus_and_a_fabric_it_does_not_have():
    [gpu] = parse.nvidia_smi_query(text("h200-pcie-x1.nvidia-smi-q.txt"))
    assert (gpu.index, gpu.name, gpu.minor, gpu.bus_id) == (0, "NVIDIA H200", 0, "00000000:00:06.0")
    # Fabric "N/A" (no NVSwitch behind a passed-through PCIe GPU) is no fabric state, not a failed one.
    assert (gpu.remap_pending, gpu.remap_failed, gpu.fabric_state) == (False, False, None)
    assert gpu.processes == () and gpu.memory_used_mib == 0


def test_the_row_remapper_section_alone_reads_as_the_full_query_does():
    [alone] = parse.nvidia_smi_query(text("h200-pcie-x1.nvidia-smi-q-d-row-remapper.txt"))
    assert (alone.bus_id, alone.remap_pending, alone.remap_failed) == ("00000000:00:06.0", False, False)


def test_topo_of_the_h200_machine_reads_through_the_underlined_header_driver_580_prints_to_a_file():
    assert "\x1b[4m" in text("h200-pcie-x1.nvidia-smi-topo-m.txt")
    [affinity] = parse.nvidia_smi_topology(text("h200-pcie-x1.nvidia-smi-topo-m.txt"))
    assert (affinity.index, affinity.cpus, affinity.numa) == (0, "0-15", 0)


def test_an_h200_profile_matches_the_captured_h200_and_an_h100_profile_names_another_model():
    query = parse.nvidia_smi_query(text("h200-pcie-x1.nvidia-smi-q.txt"))
    topo = parse.nvidia_smi_topology(text("h200-pcie-x1.nvidia-smi-topo-m.txt"))
    detail, problems = compare.gpus(H200_PCIE, ("/dev/nvidia0",), query, topo)
    assert (detail, problems) == ("1 x NVIDIA H200", [])
    h100 = H200_PCIE.model_copy(update={"gpus": H200_PCIE.gpus.model_copy(update={"type": "h100"})})
    _, problems = compare.gpus(h100, ("/dev/nvidia0",), query, topo)
    assert problems and all("NVIDIA H200" in str(p) for p in problems)

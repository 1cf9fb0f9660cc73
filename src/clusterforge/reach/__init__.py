"""The admin's machine reaching the cluster, for the deploy and the operations alike.

- ``hosts.py``: how each host is reached, read once from the inventory's pyinfra host data (address, user, key, port,
  known_hosts, host key checking, sudo), and the machines an inventory file exposes; pyinfra reads the same data for
  the deploy, and the operations get it written as an ssh_config.
- ``sudo.py``: the sudo rules, stated once: no password ever given, and what a sudo that asks for one is told.
- ``known_hosts.py``: the one known_hosts both check host keys against (``$HOME``'s, where the inventory names none),
  and ``ensure``, which makes ``~/.ssh`` and it on a new account before pyinfra starts.
- ``failures.py``: why a host was not reached, one line for the deploy (pyinfra's words) and the operations
  (OpenSSH's): "HOST: what happened: what to check".
- ``ssh.py``: the operations' connections (OpenSSH through testinfra, one master connection per host), every command
  bounded, a host that cannot be reached one ``Unreachable``, said as failures.py says it.
- ``controller.py``: a session with the cluster's controller (ask, node states, reservations, jobs submitted and
  waited for), every refusal one ``ControllerRefused`` naming the host and the cause.

`check`, `roll`, `accept` and `admit` reach the cluster through here, and the deploy's engine takes its sudo rules from
here; the Slurm commands and their readers are slurm/'s.
"""

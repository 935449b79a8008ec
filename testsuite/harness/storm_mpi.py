# SPDX-License-Identifier: GPL-2.0-or-later
"""Open MPI settings for the harness's clusters, where every emulated node
of one host runs ranks of one job."""


def open_mpi_env(iface="lo"):
    """Environment for an Open MPI program under srun --mpi=pmix on a
    harness cluster: point-to-point through libfabric's tcp provider (the
    ofi MTL over rxm) on interface IFACE ("lo" on the loopback cluster,
    "eth0" inside a namespace node), not through Open MPI's own TCP BTL.
    Debian 12's Open MPI 4.1.4 TCP BTL can fail a connect during wire-up
    on a loaded host ("connect() ... failed: Operation now in progress")
    and then crash the rank (open-mpi/ompi#10734; its fix is not in
    4.1.4).  Shared memory is no alternative: PMIx gives each rank its
    node's name, so ranks on the same host are not local to each other.
    Ranks yield when idle because they oversubscribe the host's cores."""
    return {"OMPI_MCA_pml": "cm", "OMPI_MCA_mtl": "ofi",
            "OMPI_MCA_mtl_ofi_provider_include": "tcp;ofi_rxm",
            "FI_TCP_IFACE": iface, "OMPI_MCA_oob_tcp_if_include": iface,
            "OMPI_MCA_mpi_yield_when_idle": "1"}

//! Store port: the control plane persistence contract.

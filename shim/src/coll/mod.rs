//! Collectives over the shim's perturbed point-to-point (issue 4; being built).

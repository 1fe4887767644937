"""The Kubernetes adapter (lightkube): CRDs, the client, informers, the actuator that turns
controller decisions into API writes, Lease leader election, Events and metrics."""

"""The egress broker: sandboxed programs reach the network only through it, by domain."""

from console.daemon.egress.service import EgressRun, EgressService, Resolver, RunContext

__all__ = ["EgressRun", "EgressService", "Resolver", "RunContext"]

"""The network: role daemons over the chain view and the content they verify."""

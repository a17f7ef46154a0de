"""Trajectories of harness runs: ATIF export and the public messages form."""

from rsr.trajectories.atif import Trajectory, to_atif
from rsr.trajectories.export import export_logs, messages_row
from rsr.trajectories.messages import PublicMessages, Removal, public_messages

__all__ = ["PublicMessages", "Removal", "Trajectory", "export_logs", "messages_row",
           "public_messages", "to_atif"]

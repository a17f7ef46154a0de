"""Terminal harnesses (Inspect agents): rsr/terminus2, rsr/statem, rsr/rsrt, rsr/oracle, rsr/null."""

from rsr.harness.control import TurnMeta, is_control, turn_meta
from rsr.harness.prompts.pack import PromptPack, prompt_pack
from rsr.harness.protocol import Command, Reply, StateMReply, parse_reply
from rsr.harness.rsrt import RSRTHarness, rsrt, verify_in_copy
from rsr.harness.statem import StateMHarness, Workflow, statem
from rsr.harness.terminus2 import TerminalHarness, Terminus2Config, terminus2

__all__ = [
    "Command", "PromptPack", "RSRTHarness", "Reply", "StateMHarness", "StateMReply",
    "TerminalHarness", "Terminus2Config", "TurnMeta", "Workflow", "is_control", "parse_reply",
    "prompt_pack", "rsrt", "statem", "terminus2", "turn_meta", "verify_in_copy",
]

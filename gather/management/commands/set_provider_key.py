"""python manage.py set_provider_key EMAIL --provider openai|anthropic [--model M]

The command's name before the glossary's "model key": an alias of
`set_model_key` (operators' scripts call it), with the same arguments,
behaviour and output. docs/api.md, Operator commands.
"""

from __future__ import annotations

from gather.management.commands import set_model_key


class Command(set_model_key.Command):
    help = f"{set_model_key.Command.help} (The same as set_model_key.)"

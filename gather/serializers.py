"""Input and output serializers of POST /api/gather. The OpenAPI document is
generated from these same classes (gather.api_docs). The output serializers
are the edge where a `gather.extraction.Extraction` and its typed drafts
become the contract's camelCase JSON."""

from __future__ import annotations

from rest_framework import serializers

from gather.schema import CONFIDENCE_LEVELS
from lib.json_api import StrictCharField

TEXT_MAX = 100_000  # characters, after trimming (docs/api.md)


class GatherSerializer(serializers.Serializer):
    # Trimmed and judged blank as the inbound API's strings are (lib.text).
    text = StrictCharField(
        min_length=1,
        max_length=TEXT_MAX,
        help_text=(
            "The raw source text: meeting notes, a chat log, an e-mail thread. "
            "1 to 100,000 characters after trimming."
        ),
    )


class DraftSerializer(serializers.Serializer):
    description = serializers.CharField(help_text="What is to be done, as a commitment.")
    assigneeName = serializers.CharField(
        source="assignee_name",
        allow_null=True,
        help_text="Who is asked, as the text names them; null when nobody is.",
    )
    assigneeEmail = serializers.EmailField(
        source="assignee_email",
        allow_null=True,
        help_text=(
            "Filled only when the name matches exactly one of your collaborators (people you "
            "already have a commitment with, either way); otherwise null."
        ),
    )
    deadline = serializers.DateTimeField(
        allow_null=True,
        help_text="The deadline resolved to ISO-8601 with your time zone's offset, or null.",
    )
    deadlineText = serializers.CharField(
        source="deadline_text",
        allow_null=True,
        help_text='The deadline as the text says it ("by Friday"), or null.',
    )
    confidence = serializers.ChoiceField(
        choices=list(CONFIDENCE_LEVELS), help_text="How sure the model is of this draft."
    )
    sourceQuote = serializers.CharField(
        source="source_quote", help_text="The passage of the text the draft comes from, verbatim."
    )


class UsageSerializer(serializers.Serializer):
    inputTokens = serializers.IntegerField(source="input_tokens", min_value=0)
    outputTokens = serializers.IntegerField(source="output_tokens", min_value=0)


class GatherResultSerializer(serializers.Serializer):
    drafts = DraftSerializer(many=True, help_text="Draft commitments; empty when none were found.")
    model = serializers.CharField(help_text="The provider's model that answered.")
    usage = UsageSerializer(help_text="Tokens used, as the provider reported them.")
    refusal = serializers.CharField(
        allow_null=True,
        help_text=(
            "Null, unless the model declined to read your text: then its own words (with a "
            "long text read in parts, prefixed with the parts it declined). What it declined "
            "gives no drafts; usage still counts the call."
        ),
    )

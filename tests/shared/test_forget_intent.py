"""Forget phrase families in English, German, French and Spanish: table-driven positives (with
the target's topic words) and negatives that must never count as a forget request."""

from __future__ import annotations

import pytest

from shared.forget_intent import MAX_MESSAGE_CHARS, detect_forget
from shared.forget_terms import stem

# (message, language, family, topic words of the target)
POSITIVES: list[tuple[str, str, str, list[str]]] = [
    # English
    ("forget my phone number", "en", "forget", ["phone", "number"]),
    ("Please forget where I work", "en", "forget", ["work"]),
    ("Can you forget where my sister lives?", "en", "forget", ["sister", "lives"]),
    ("forget what my boss said about the budget", "en", "forget", ["boss", "budget"]),
    ("forget that my dog is called Rex", "en", "forget", ["dog", "call", "rex"]),
    ("Forget that I'm a nurse", "en", "forget", ["nurse"]),  # a contraction after "that I"
    ("Please forget that I’ve got a dog", "en", "forget", ["dog"]),
    ("forget where I've lived", "en", "forget", ["lived"]),  # every "I" of a target
    ("Forget what I'm allergic to", "en", "forget", ["allergic"]),
    ("Forget the fact that my car is red.", "en", "forget", ["car", "red"]),
    ("Can you forget my address?", "en", "forget", ["address"]),
    ("Forget everything you know about my sister", "en", "forget", ["sister"]),
    ("forget what I told you about my diet", "en", "forget", ["diet"]),
    ("delete what you know about my address", "en", "delete", ["address"]),
    ("Erase everything you know about my allergies.", "en", "delete", ["allergies"]),
    ("remove my address from your memory", "en", "delete", ["address"]),
    ("stop remembering my diet", "en", "stop_remembering", ["diet"]),
    ("Please stop remembering which gym I go to", "en", "stop_remembering", ["gym"]),
    ("don't remember my birthday anymore", "en", "stop_remembering", ["birthday"]),
    ("don't keep my travel plans anymore", "en", "dont_keep", ["travel", "plans"]),
    ("I'd like you to forget my salary. Thanks!", "en", "forget", ["salary"]),
    ("actually, forget my locker number", "en", "forget", ["locker", "number"]),
    ("Actually, please forget my locker number", "en", "forget", ["locker", "number"]),
    ("Hmm, can you forget my locker number?", "en", "forget", ["locker", "number"]),
    ("Well, forget where I work", "en", "forget", ["work"]),
    ("Oh, could you please forget my address?", "en", "forget", ["address"]),
    ("By the way, stop remembering my diet", "en", "stop_remembering", ["diet"]),
    # German
    ("Vergiss meine Telefonnummer", "de", "forget", ["Telefonnummer"]),
    ("Bitte vergiss, wo ich arbeite", "de", "forget", ["arbeite"]),
    ("Lösche, was du über meine Adresse weißt", "de", "delete", ["Adresse"]),
    ("Hör auf, dir meine Diät zu merken", "de", "stop_remembering", ["Diät"]),
    ("Merk dir meine Adresse nicht mehr", "de", "stop_remembering", ["Adresse"]),
    ("Kannst du bitte meine Adresse vergessen?", "de", "can_you_forget", ["Adresse"]),
    ("Speichere meine Reisepläne nicht mehr", "de", "dont_keep", ["Reisepläne"]),
    ("Eigentlich, vergiss meine Adresse", "de", "forget", ["Adresse"]),
    ("Ähm, bitte vergiss meine Telefonnummer", "de", "forget", ["Telefonnummer"]),
    ("Hmm, kannst du meine Adresse vergessen?", "de", "can_you_forget", ["Adresse"]),
    # French
    ("Oublie mon numéro de téléphone", "fr", "forget", ["numéro", "téléphone"]),
    ("Oublie où je travaille", "fr", "forget", ["travaille"]),
    ("Supprime ce que tu sais sur mon adresse", "fr", "delete", ["adresse"]),
    ("Arrête de te souvenir de mon régime", "fr", "stop_remembering", ["régime"]),
    ("Ne garde plus mes projets de voyage", "fr", "dont_keep", ["projets", "voyage"]),
    ("Peux-tu oublier mon adresse ?", "fr", "can_you_forget", ["adresse"]),
    ("En fait, oublie mon adresse", "fr", "forget", ["adresse"]),
    ("Euh, peux-tu oublier mon adresse ?", "fr", "can_you_forget", ["adresse"]),
    ("S'il te plaît, oublie où je travaille", "fr", "forget", ["travaille"]),
    # Spanish
    ("Olvida mi número de teléfono", "es", "forget", ["número", "teléfono"]),
    ("Olvídate de dónde trabajo", "es", "forget", ["trabajo"]),
    ("Borra lo que sabes sobre mi dirección", "es", "delete", ["dirección"]),
    ("Deja de recordar mi dieta", "es", "stop_remembering", ["dieta"]),
    ("No guardes más mis planes de viaje", "es", "dont_keep", ["planes", "viaje"]),
    ("¿Puedes olvidar mi dirección?", "es", "can_you_forget", ["dirección"]),
    ("La verdad, olvida mi número de teléfono", "es", "forget", ["número", "teléfono"]),
    ("Por favor, ¿puedes olvidar mi dirección?", "es", "can_you_forget", ["dirección"]),
    ("Bueno, deja de recordar mi dieta", "es", "stop_remembering", ["dieta"]),
]

NEGATIVES: list[str] = [
    # English: statements, reminders, dismissals, questions, deletes of non-memories
    "never mind that, what's the time in Tokyo?",
    "I always forget my passwords",
    "I forgot my umbrella on the train",
    "Forget about the report, let's plan the trip",
    "Don't forget my birthday",
    "Did you forget my name?",
    "delete my account",
    "How do I delete my account?",
    "Forget it",
    "forget that",
    "I want to forget my ex",
    "He told me to forget my worries",
    "remember my phone number",
    "clear my calendar for Friday",
    "forget about my diet, what should I cook tonight?",
    "How do I make git forget my credentials?",
    "forget everything",
    "Actually, I always forget my passwords",
    "Hmm, forget it",
    "Well, forget about the report, let's plan the trip",
    "Oh, did you forget my name?",
    "Actually, don't forget my birthday",
    "Hmm, can you delete my account?",
    "Eigentlich vergesse ich immer meine Passwörter",
    "Hmm, hast du meinen Namen vergessen?",
    "En fait, j'oublie toujours mes mots de passe",
    "La verdad, siempre olvido mis contraseñas",
    # German
    "Ich vergesse immer meine Passwörter",
    "Ich habe meinen Regenschirm im Zug vergessen",
    "Vergiss nicht meinen Geburtstag",
    "Vergiss es",
    "Vergiss den Bericht, lass uns die Reise planen",
    "Lösche mein Konto",
    "Hast du meinen Namen vergessen?",
    # French
    "J'oublie toujours mes mots de passe",
    "J'ai oublié mon parapluie dans le train",
    "N'oublie pas mon anniversaire",
    "Oublie ça",
    "Oublie le rapport, planifions le voyage",
    "Supprime mon compte",
    "Comment supprimer mon compte ?",
    # Spanish
    "Siempre olvido mis contraseñas",
    "Olvidé mi paraguas en el tren",
    "No olvides mi cumpleaños",
    "Olvídalo",
    "Olvida el informe, planifiquemos el viaje",
    "Borra mi cuenta",
    "¿Cómo borro mi cuenta?",
    "No recuerdo mi contraseña",
]


def test_tables_cover_every_language_with_enough_cases() -> None:
    assert len(POSITIVES) >= 20 and len(NEGATIVES) >= 20
    assert {lang for _t, lang, _f, _w in POSITIVES} == {"en", "de", "fr", "es"}


@pytest.mark.parametrize(("text", "language", "family", "words"), POSITIVES)
def test_forget_request_is_recognised(
    text: str, language: str, family: str, words: list[str]
) -> None:
    intent = detect_forget(text)
    assert intent is not None, text
    assert (intent.language, intent.family) == (language, family)
    assert set(intent.stems) == {stem(w) for w in words}


@pytest.mark.parametrize("text", NEGATIVES)
def test_not_a_forget_request(text: str) -> None:
    assert detect_forget(text) is None


def test_curly_apostrophes_and_long_messages() -> None:
    assert detect_forget("don\u2019t keep my travel plans anymore") is not None
    padded = "forget my phone number " + "x" * MAX_MESSAGE_CHARS
    assert detect_forget(padded) is None


def test_forget_sentence_inside_a_longer_message() -> None:
    intent = detect_forget("Thanks for the help. Please forget where I work.")
    assert intent is not None and intent.target == "where I work"

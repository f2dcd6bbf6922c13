"""Pairs of texts for the stance tests (unit and integration): the issue's table of contradicting saves,
one pair of each kind the stance check names, and re-wordings that keep their stance."""

from __future__ import annotations

# The table, then one pair of each kind the stance check names.
TABLE = [
    ("Priya is allergic to peanuts.", "Priya is not allergic to peanuts.", "negation"),
    ("Priya prefers tabs over spaces.", "Priya prefers spaces over tabs.", "order"),
    ("Harbor deploys on Tuesdays.", "Harbor never deploys on Tuesdays.", "negation"),
    ("Priya likes dark mode in her editor.", "Priya dislikes dark mode in her editor.", "antonym"),
    ("Kenji Sato is on call this week.", "Kenji Sato was on call last week.", "time"),
]
KINDS = [
    ("Tomas drinks coffee every morning.", "Tomas no longer drinks coffee every morning.", "negation"),
    ("Priya uses Windows at work.", "Priya doesn't use Windows at work.", "negation"),
    ("Maya takes her coffee with sugar.", "Maya takes her coffee without sugar.", "negation"),
    ("Tomas smokes after lunch.", "Tomas stopped smoking after lunch.", "negation"),
    ("Tomas smokes after lunch.", "Tomas quit smoking after lunch.", "negation"),
    ("Some of the Harbor tests are flaky.", "None of the Harbor tests are flaky.", "negation"),
    ("Kenji can work on weekends.", "Kenji cannot work on weekends.", "negation"),
    ("Kenji can work on weekends.", "Kenji can't work on weekends.", "negation"),
    ("Tomas loves jazz concerts.", "Tomas hates jazz concerts.", "antonym"),
    ("Pets are allowed in the Lisbon office.", "Pets are forbidden in the Lisbon office.", "antonym"),
    ("Two-factor login is enabled for Harbor.", "Two-factor login is disabled for Harbor.", "antonym"),
    ("Priya prefers window seats on flights.", "Priya avoids window seats on flights.", "antonym"),
    ("Harbor deploys before the standup.", "Harbor deploys after the standup.", "antonym"),
    ("The nightly backup job is on.", "The nightly backup job is off.", "antonym"),
    ("The staging API is available.", "The staging API is unavailable.", "antonym"),
    ("Maya prefers Python rather than Go.", "Maya prefers Go rather than Python.", "order"),
    ("Maya uses Vim instead of Emacs.", "Maya uses Emacs instead of Vim.", "order"),
    ("Maya moved from Lisbon to Porto.", "Maya moved from Porto to Lisbon.", "order"),
    ("Priya works remotely now.", "Priya previously worked remotely.", "time"),
    ("Kenji used to lead the Harbor team.", "Kenji leads the Harbor team.", "time"),
    ("Nora will present the roadmap.", "Nora was presenting the roadmap.", "time"),
]
SAME = [
    ("Priya doesn't eat meat.", "Priya does not eat meat."),
    ("Maya bought a bicycle in Lisbon.", "Maya purchased a bicycle in Lisbon."),
    ("Maya moved from Lisbon to Porto.", "Maya moved to Porto from Lisbon."),
    ("Priya is allergic to peanuts.", "PRIYA IS ALLERGIC TO PEANUTS"),
    ("Priya is allergic to peanuts.", "Priya has a peanut allergy."),
    ("Kenji is on call.", "Kenji is on call this week."),  # adding a present marker is no move
    ("Harbor never deploys on Fridays.", "Harbor does not ever deploy on Fridays."),
]

"""The probe pairs a model's cosine scale is measured on (engine/calibration).

Each pair is a short standalone note, as memory stores one, and a question
that asks for it in other words. Cosines of a question with its own note
give the model's "related" level, with the other notes its "unrelated"
level and spread. The pairs span coding work and everyday life so that no
one domain sets the scale; none comes from the quality sets.
"""

from __future__ import annotations

PROBE_PAIRS: tuple[tuple[str, str], ...] = (
    (
        "The nightly backup job copies the Postgres dump to object storage at 02:30 UTC "
        "and keeps thirty days of snapshots.",
        "when does the database get saved off-site and how long are copies kept?",
    ),
    (
        "We pinned the Node version to 22 in .nvmrc because the image library crashed on 20.",
        "which JavaScript runtime release do we require, and why not the older one?",
    ),
    (
        "Login sessions expire after eight hours of inactivity; the refresh token lasts a week.",
        "how long can a user stay signed in without doing anything?",
    ),
    (
        "The flaky upload test failed because it raced the thumbnail worker; it now waits "
        "on the job's completion event.",
        "why did the file transfer check break now and then?",
    ),
    (
        "Invoices are rendered with WeasyPrint from HTML templates stored in the billing repo.",
        "what turns our billing documents into PDFs?",
    ),
    (
        "Feature flags live in LaunchDarkly; stale flags older than ninety days get a cleanup ticket.",
        "where do we toggle unfinished functionality and when are old toggles removed?",
    ),
    (
        "The mobile app talks to the API through a GraphQL gateway written in Go.",
        "what sits between the phone client and the backend services?",
    ),
    (
        "Search results are cached in Memcached for sixty seconds per query string.",
        "how long do we hold on to lookup answers before recomputing them?",
    ),
    (
        "Emails go out through Postmark; bounces are written back to the users table.",
        "which provider delivers our outgoing mail and what happens to failed deliveries?",
    ),
    (
        "Code review needs two approvals for anything touching the payments module.",
        "how many sign-offs does a change to money handling require?",
    ),
    (
        "The staging cluster scales to zero at night to save cost and wakes on the first request.",
        "why is the pre-production environment slow on the first call in the morning?",
    ),
    (
        "Alice owns the data pipeline; questions about the warehouse schema go to her.",
        "who should I ask about the structure of the analytics tables?",
    ),
    (
        "We replaced Moment.js with date-fns to cut 60 KB from the bundle.",
        "which time formatting library does the frontend use now, and what did it save?",
    ),
    (
        "Logs older than fourteen days are deleted from the central log store.",
        "what is the retention period for application log lines?",
    ),
    (
        "The CSV importer rejects files larger than 50 MB and asks users to split them.",
        "is there a size limit on spreadsheets people upload?",
    ),
    (
        "Our API rate limit is 600 requests per minute per token, returning 429 beyond that.",
        "how many calls can a client make before it gets throttled?",
    ),
    (
        "Translations are managed in Crowdin and pulled into the repo every Monday.",
        "how do localized strings get into the codebase?",
    ),
    (
        "Docker images are built on the CI runner with BuildKit cache mounts for pip.",
        "how do we keep container builds fast in continuous integration?",
    ),
    (
        "The search page paginates with cursors, not offsets, since deep pages timed out.",
        "why doesn't the results listing use page numbers?",
    ),
    (
        "Secrets are read from Vault at startup; nothing sensitive is kept in environment files.",
        "where do services get their passwords and keys from?",
    ),
    (
        "Grandma's lasagna recipe uses a bechamel layer instead of ricotta.",
        "what goes into the family pasta bake in place of the cheese filling?",
    ),
    (
        "The car's next service is due at 60,000 km or in March, whichever comes first.",
        "when does the vehicle need to go back to the garage?",
    ),
    (
        "Our flight to Lisbon leaves at 07:10 from terminal 2; check-in closes an hour before.",
        "what time do we have to be at the airport for the Portugal trip?",
    ),
    (
        "The heating thermostat is set to 19 degrees during the day and 16 at night.",
        "how warm do we keep the house after dark?",
    ),
    (
        "The book club meets on the first Thursday of each month at the library.",
        "when and where does the reading group get together?",
    ),
    (
        "Water the fiddle-leaf fig once a week and keep it away from the radiator.",
        "how should the big indoor plant be cared for?",
    ),
    (
        "Tom is allergic to peanuts, so the office snacks are nut-free.",
        "why are there no nuts in the break room?",
    ),
    (
        "The apartment lease renews in September with a three percent rent increase.",
        "when does the housing contract roll over and by how much will it cost more?",
    ),
    (
        "I run five kilometres on Tuesdays and Saturdays along the river path.",
        "what is my jogging routine?",
    ),
    (
        "The kids' dentist appointment moved to the 14th at half past three.",
        "when do the children see the tooth doctor?",
    ),
    (
        "Bug reports from support are triaged every morning by the on-call engineer.",
        "who looks at customer-reported defects and how often?",
    ),
    (
        "The Kafka topic for orders keeps seven days of messages with twelve partitions.",
        "how is the event stream for purchases configured?",
    ),
    (
        "We chose SQLite for the desktop client because it must work offline.",
        "why does the installed app use an embedded database?",
    ),
    (
        "The design system's primary colour is #1F6FEB and buttons use 8 px rounded corners.",
        "what brand colour and corner radius do our UI controls have?",
    ),
    (
        "Release notes are drafted from merged pull request titles by a script on tag push.",
        "how is the changelog produced for a new version?",
    ),
    (
        "The memory leak in the worker came from an unbounded LRU cache; it is now capped at 10k items.",
        "what caused the background process to keep growing in RAM?",
    ),
    (
        "TLS certificates renew automatically through cert-manager thirty days before expiry.",
        "do we have to replace the HTTPS certificates by hand?",
    ),
    (
        "Customer data for EU accounts is stored only in the Frankfurt region.",
        "where do European users' records physically live?",
    ),
    (
        "The GPU nodes are reserved for the recommendation model's weekly retraining.",
        "what are the graphics-card machines used for?",
    ),
    (
        "Pull requests must pass mypy in strict mode before they can be merged.",
        "what type checking gate does a change have to clear?",
    ),
)

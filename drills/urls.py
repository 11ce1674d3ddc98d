"""URLs of the ``drills`` app, mounted once at the site's root by :mod:`config.urls`.

Four namespaces, as before the app was split by concept: ``drills`` (the
problems, design prompts and critique drills under ``/drills/``), ``reviews``
(the bank, reviews and progress at the root), ``lab`` (``/lab/``) and
``rounds`` (``/rounds/``).
"""

from django.urls import include, path

from drills.critique import urls as critique_urls
from drills.problems import urls as problem_urls
from drills.reviews import bank_urls
from drills.reviews import urls as review_urls

urlpatterns = [
    # Design and critique slugs come before the families' patterns, which would claim them.
    path("drills/", include(([*problem_urls.index, *critique_urls.urlpatterns, *problem_urls.urlpatterns],
                             "drills"))),
    path("", include(([*bank_urls.urlpatterns, *review_urls.urlpatterns], "reviews"))),
    path("lab/", include("drills.lab.urls")),
    path("rounds/", include("drills.rounds.urls")),
]

"""URLs of coaching (namespace ``coaching``), mounted at the root: ``/coach/…``, ``/assignments/…``, ``/invite/…``,
``/calibrations/shared/…``."""

from django.urls import path

from . import calibrations, candidate_views, endpoint, views

app_name = "coaching"

urlpatterns = [
    path("coach/", views.dashboard_page, name="dashboard"),
    path("coach/tables/", views.dashboard_tables, name="dashboard_tables"),
    path("coach/cohorts/new/", views.cohort_new, name="cohort_new"),
    path("coach/cohorts/<int:pk>/", views.cohort_page, name="cohort"),
    path("coach/cohorts/<int:pk>/invite/", views.cohort_invite, name="cohort_invite"),
    path("coach/cohorts/<int:pk>/members/<int:user_pk>/remove/", views.cohort_remove, name="cohort_remove"),
    path("coach/cohorts/<int:pk>/grading/", endpoint.cohort_endpoint, name="cohort_endpoint"),
    path("coach/cohorts/<int:pk>/calibrations/", calibrations.share, name="share_calibration"),
    path("coach/cohorts/<int:pk>/grading/remove/", endpoint.remove_cohort_endpoint, name="cohort_endpoint_remove"),
    path("coach/candidates/<int:pk>/", views.candidate_page, name="candidate"),
    path("coach/attempts/<int:pk>/", views.attempt_page, name="attempt"),
    path("coach/answers/<int:pk>/", views.review_page, name="review"),
    path("coach/assignments/<int:pk>/", views.assignment_page, name="assignment"),
    path("coach/questions/", views.questions, name="questions"),
    path("coach/questions/new/", views.question_new, name="question_new"),
    path("coach/questions/preview/", views.question_preview, name="question_preview"),
    path("coach/questions/copy/", views.question_copy, name="question_copy"),
    path("coach/questions/<int:pk>/edit/", views.question_edit, name="question_edit"),
    path("coach/items/search/", views.item_search, name="item_search"),
    path("coach/sets/", views.sets, name="sets"),
    path("coach/sets/new/", views.set_new, name="set_new"),
    path("coach/sets/<int:pk>/", views.set_page, name="set"),
    path("coach/sets/<int:pk>/entries/", views.set_add, name="set_add"),
    path("coach/sets/<int:pk>/entries/<int:entry_pk>/remove/", views.entry_remove, name="entry_remove"),
    path("coach/sets/<int:pk>/entries/<int:entry_pk>/move/", views.entry_move, name="entry_move"),
    path("coach/sets/<int:pk>/assign/", views.set_assign, name="set_assign"),
    path("assignments/", candidate_views.my_assignments, name="my_assignments"),
    path("assignments/<int:pk>/", candidate_views.my_assignment, name="my_assignment"),
    path("assignments/<int:pk>/start/", candidate_views.start_timed, name="start_timed"),
    path("assignments/<int:pk>/entries/<int:entry_pk>/start/", candidate_views.start_entry, name="start_entry"),
    path("invite/<str:token>/", candidate_views.invitation, name="invitation"),
    path("calibrations/shared/", calibrations.shared_calibrations, name="shared_calibrations"),
    path("calibrations/shared/<int:pk>/apply/", calibrations.apply_shared, name="apply_shared_calibration"),
]

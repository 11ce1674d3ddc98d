"""URLs of design prompts and critique drills: ``/drills/``, in the ``drills`` namespace (see :mod:`drills.urls`)."""

from django.urls import path

from drills.critique import views

urlpatterns = [
    path("design/<slug:slug>/", views.design, name="design"),
    path("design/<slug:slug>/answer/", views.design_answer, name="design_answer"),
    path("critique/<slug:slug>/", views.critique, name="critique"),
    path("critique/<slug:slug>/attempts/<int:pk>/", views.critique_attempt, name="critique_attempt"),
    path("critique/<slug:slug>/attempts/<int:pk>/assess/", views.critique_assess, name="critique_assess"),
    path("critique/<slug:slug>/attempts/<int:pk>/grade/", views.critique_grade, name="critique_grade"),
]

"""What the browser tests share: a staff user, logging in, a screenshot."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import Permission

PNG = b"\x89PNG\r\n\x1a\n"


def staff(django_user_model, username: str, codenames: list[str]):
    user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="django_workhorse", codename__in=codenames
        )
    )
    return user


def screenshot(page, path: Path) -> Path:
    page.screenshot(path=str(path), full_page=True)
    data = path.read_bytes()
    assert data.startswith(PNG) and len(data) > 2000, f"{path} is not a real screenshot"
    return path


def log_in(context, base: str, username: str):
    page = context.new_page()
    page.goto(f"{base}/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/")
    return page
